"""The playground: its map route (PCA computed by the server), and the page driven in a real browser."""

from __future__ import annotations

import shutil
import time

import numpy as np
import pytest

from tests.service.conftest import live_server, settings_for, write_sample
from thoughtvec.service.core.projection import pca_2d, project

DOCS = [
    "the cat sat on the table .",
    "a dog ran in the city",
    "the old man read a letter",
    "she walked to the river",
    "the happy woman sleeps",
    "they drove a red car",
]


def test_pca_2d_finds_the_main_axis():
    rng = np.random.default_rng(0)
    x = np.outer(rng.standard_normal(50), [3.0, 0, 0, 4.0]) + 0.01 * rng.standard_normal((50, 4))
    mean, axes, share = pca_2d(x)
    assert abs(axes[0] @ np.array([0.6, 0, 0, 0.8])) == pytest.approx(1.0, abs=1e-3) and share[0] > 0.99
    np.testing.assert_allclose(project(x, mean, axes)[:, 0].var() / x.var(0).sum(), share[0], rtol=1e-3)


def test_map_places_documents_and_query(client):
    client.post("/v1/indexes", json={"name": "m", "model": "tiny"})
    client.post("/v1/indexes/m/documents", json={"documents": [{"text": t, "id": str(i)} for i, t in enumerate(DOCS)]})
    r = client.post("/v1/indexes/m/map", json={"query": DOCS[0], "limit": 100})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [p["id"] for p in body["points"]] == [str(i) for i in range(len(DOCS))] and len(body["explained_variance"]) == 2
    assert (body["query"]["x"], body["query"]["y"]) == pytest.approx((body["points"][0]["x"], body["points"][0]["y"]), abs=1e-5)
    assert client.post("/v1/indexes/m/map", json={"limit": 2}).json()["error"]["field"] == "limit"
    picked = client.post("/v1/indexes/m/map", json={"limit": 3, "include": ["5", "nope", "4"]}).json()["points"]
    assert [p["id"] for p in picked] == ["5", "4", "0"]  # the included first, unknown ids skipped, then the first added
    assert client.post("/v1/indexes/nope/map", json={}).status_code == 404
    assert "thoughtvec playground" in client.get("/").text


def _browser(network_log: bool = False):
    """A headless Chromium driven by selenium, or a skip saying what is missing; ``network_log``: with its DevTools
    network events kept (``browser.get_log("performance")``)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("no system browser: apt-get install chromium chromium-driver (CI does)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,1400"):
        opts.add_argument(arg)
    if network_log:
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver))


def test_playground_in_a_real_browser(search_models_dir, tmp_path):
    """The page's search is the API's default search (same mode, same hits, same scores, hybrid ranks shown),
    and its map marks the hits of that same search."""
    browser = _browser()
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    sample = write_sample(tmp_path / "s.tsv.gz")
    settings = settings_for(search_models_dir, tmp_path / "idx", build_default_index=True, search_sample=sample)
    try:
        with live_server(settings) as (base, _):
            deadline = time.time() + 60  # the default index is built in the background after /ready
            while httpx.get(base + "/v1/indexes/default").status_code != 200 and time.time() < deadline:
                time.sleep(0.05)
            api = httpx.post(base + "/v1/search", json={"query": "the man read a book", "k": 5}).json()
            assert api["mode"] == "hybrid"  # the default index is built with the default search of a new index
            browser.get(base + "/")
            wait = WebDriverWait(browser, 15)
            wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#index option"))
            assert "hybrid" in browser.find_element(By.CSS_SELECTOR, "#index option").text
            query = browser.find_element(By.ID, "query")
            query.clear()
            query.send_keys("the man read a book")
            browser.find_element(By.ID, "search-btn").click()
            hits = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#results li.hit"))
            assert browser.find_element(By.ID, "search-mode").get_attribute("data-mode") == "hybrid"
            assert "hybrid" in browser.find_element(By.ID, "search-mode").text
            assert [h.get_attribute("data-id") for h in hits] == [h["id"] for h in api["results"][0]]
            assert [h.find_element(By.CLASS_NAME, "score").text for h in hits] == [f"{h['score']:.3f}" for h in api["results"][0]]
            for h, want in zip(hits, api["results"][0]):
                r = want["ranks"]
                shown = f"dense {'#' + str(r['dense']) if r['dense'] else '–'} · BM25 {'#' + str(r['lexical']) if r['lexical'] else '–'}"
                assert h.find_element(By.CLASS_NAME, "ranks").text == shown
            browser.find_element(By.ID, "compare-btn").click()
            wait.until(ec.text_to_be_present_in_element((By.ID, "pair-score"), "cosine"))
            browser.find_element(By.ID, "map-btn").click()
            wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#map circle.doc")) == 60)
            assert len(browser.find_elements(By.CSS_SELECTOR, "#map circle.hit")) == 5  # the same search's results
            assert "found in mode hybrid" in browser.find_element(By.ID, "map-info").text
            assert browser.find_elements(By.CSS_SELECTOR, "#map path.query")
            assert not browser.find_element(By.ID, "search-error").text
    finally:
        browser.quit()


def test_generate_in_a_real_browser(tmp_path_factory, tmp_path):
    """The Generate section lists the models that can generate and shows what POST /v1/generate answers: a story,
    and a path with its points."""
    from tests.decoder_bundles import decoder_models

    models = decoder_models(tmp_path_factory)
    browser = _browser()
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    settings = settings_for(models, tmp_path / "idx", default_model="uni-skip")
    first, second = "anna walked into the garden .", "the coat was old and small ."
    try:
        with live_server(settings) as (base, _):
            story = httpx.post(base + "/v1/generate", json={"model": "uni-skip", "input": first, "story": 3}).json()
            path = httpx.post(base + "/v1/generate", json={"model": "mean-max-aae", "input": first, "to": second, "steps": 4}).json()
            browser.get(base + "/")
            wait = WebDriverWait(browser, 15)
            wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#gen-model option"))
            models = Select(browser.find_element(By.ID, "gen-model"))
            assert models.first_selected_option.text == "uni-skip"  # the default model
            assert [o.text for o in models.options] == ["mean-max-aae", "uni-skip"]  # not tiny: it has no decoder
            for el, value in (("gen-a", first), ("gen-b", second)):
                box = browser.find_element(By.ID, el)
                box.clear()
                box.send_keys(value)
            browser.find_element(By.ID, "gen-btn").click()
            rows = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#gen-out li.gen"))
            assert [r.text for r in rows] == [d["text"] for d in story["data"]]
            assert "task next" in browser.find_element(By.ID, "gen-info").text
            Select(browser.find_element(By.ID, "gen-model")).select_by_visible_text("mean-max-aae")
            Select(browser.find_element(By.ID, "gen-mode")).select_by_value("path")
            n = browser.find_element(By.ID, "gen-n")
            n.clear()
            n.send_keys("4")
            browser.find_element(By.ID, "gen-btn").click()
            wait.until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "#gen-out li.gen")) == 4)
            rows = browser.find_elements(By.CSS_SELECTOR, "#gen-out li.gen")
            assert [r.text for r in rows] == [f"t {d['t']:.2f}{d['text']}" for d in path["data"]]
            assert not browser.find_element(By.ID, "gen-error").text
    finally:
        browser.quit()


def test_the_generate_tab_starts_on_a_model_that_can(tmp_path_factory, tmp_path):
    """With a server whose default model has no decoder, the Generate tab starts on the default generation model,
    on what it can do (a reconstruction: the AAE tells no story), and its first click answers 200."""
    from tests.decoder_bundles import decoder_models

    models = decoder_models(tmp_path_factory)
    browser = _browser()
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    settings = settings_for(models, tmp_path / "idx")  # default_model "tiny": no decoder
    try:
        with live_server(settings) as (base, _):
            sentence = httpx.get(base + "/").text.split('id="gen-a" value="')[1].split('"')[0]
            want = httpx.post(base + "/v1/generate", json={"input": sentence, "task": "reconstruct"}).json()
            browser.get(base + "/")
            wait = WebDriverWait(browser, 15)
            wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#gen-model option"))
            assert Select(browser.find_element(By.ID, "gen-model")).first_selected_option.text == "mean-max-aae" == want["model"]
            assert Select(browser.find_element(By.ID, "gen-mode")).first_selected_option.get_attribute("value") == "reconstruct"
            browser.find_element(By.ID, "gen-btn").click()
            rows = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#gen-out li.gen") or b.find_element(By.ID, "gen-error").text)
            assert not browser.find_element(By.ID, "gen-error").text and [r.text for r in rows] == [want["data"][0]["text"]]
            assert "mean-max-aae · task reconstruct" in browser.find_element(By.ID, "gen-info").text
    finally:
        browser.quit()

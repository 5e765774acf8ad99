"""The docs site builds strictly (every link and anchor resolves, every page is in the nav) and works
offline: no page loads a script, a style sheet, a font or an image from another host; read as the README says
(over HTTP), its search finds pages."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What a browser fetches by itself: src= of any element, href= of <link>, url(...) in CSS.
_ASSET = re.compile(r"""(?:\bsrc\s*=\s*["']?|<link\b[^>]*?\bhref\s*=\s*["']?|\burl\(\s*["']?)(https?:)?//""", re.I)


def external_assets(text: str) -> list[str]:
    """The remote asset references in an HTML or CSS text (context around each)."""
    return [text[max(0, m.start() - 60) : m.end() + 60] for m in _ASSET.finditer(text)]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
    return out


def test_every_page_is_built(site):
    nav = re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    assert nav and all((site / ("" if p == "index.md" else p[:-3]) / "index.html").is_file() for p in nav)


def test_nothing_is_loaded_from_another_host(site):
    found = {str(f.relative_to(site)): hits for f in sorted(site.rglob("*")) if f.suffix in (".html", ".css")
             for hits in [external_assets(f.read_text(encoding="utf-8", errors="replace"))] if hits}  # fmt: skip
    assert not found, f"remote assets: {found}"


@pytest.mark.parametrize(
    ("text", "remote"),
    [
        ('<script src="https://cdn.example/x.js"></script>', True),
        ('<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">', True),
        ('<link rel="preconnect" href="//fonts.gstatic.com">', True),
        ("@font-face{src:url(https://fonts.gstatic.com/a.woff2)}", True),
        ('<img src="../playground.png">', False),
        ('<a href="https://milvus.io">Milvus</a>', False),  # a link the reader may follow, not an asset
        ('<script src="assets/javascripts/bundle.js"></script>', False),
    ],
)
def test_external_assets(text, remote):
    assert bool(external_assets(text)) is remote


def test_the_search_finds_pages_when_the_site_is_read_as_the_readme_says(site):
    """`python3 -m http.server -d build/site`, then the site in Chromium: a query lists pages (opened as a file, the
    search's web worker never starts and it says "Initializing search" forever)."""
    from tests.service.http.test_playground import _browser

    assert "python3 -m http.server -d build/site" in (ROOT / "README.md").read_text(encoding="utf-8")
    browser = _browser()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        browser.set_window_size(1400, 1000)  # wide enough for the header's search field
        browser.get(f"http://127.0.0.1:{server.server_address[1]}/")
        field = WebDriverWait(browser, 15).until(
            lambda b: next((e for e in b.find_elements(By.CSS_SELECTOR, "input[data-md-component=search-query]") if e.is_displayed()), None)
        )
        field.click()
        field.send_keys("milvus")
        hits = WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, ".md-search-result__item a"))
        assert any("search" in (h.get_attribute("href") or "") for h in hits), [h.get_attribute("href") for h in hits]
    finally:
        browser.quit()
        server.shutdown()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

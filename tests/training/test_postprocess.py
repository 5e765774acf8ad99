"""Post-processing for cosine views: the choice is made on dev pairs, written into the bundle, and
served by the encoder; the cosine task reports dev beside test."""

import json

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from tests.training.conftest import toy_documents, write_corpus
from tests.training.fixtures.eval.senteval_tiny import write_senteval
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.evaluation import datasets, tasks
from thoughtvec.training.evaluation.classifiers import MODES, cosine_correlation
from thoughtvec.training.evaluation.dev_pairs import load_dev_pairs
from thoughtvec.training.export import postprocess


def _anisotropic(dim=16, n_signal=4, seed=0):
    """Vectors = a large shared offset + a small sentence-specific signal, as untreated encoders give."""
    rng = np.random.default_rng(seed)
    offset = 20.0 * rng.standard_normal(dim)
    table: dict[str, np.ndarray] = {}

    def encode(texts):
        out = []
        for t in texts:
            if t not in table:
                table[t] = offset * (1 + 0.3 * rng.standard_normal()) + rng.standard_normal(dim)
            out.append(table[t])
        return np.asarray(out, np.float32)

    return encode, table


def test_choose_keeps_the_candidate_best_on_dev_and_says_so():
    encode, table = _anisotropic()
    firsts = [f"a{i}" for i in range(200)]
    seconds = [f"b{i}" for i in range(200)]
    encode(firsts + seconds + [f"c{i}" for i in range(500)])
    centre = np.mean([table[f"c{i}"] for i in range(500)], 0)
    gold = np.array(
        [
            np.dot(table[a] - centre, table[b] - centre) / np.linalg.norm(table[a] - centre) / np.linalg.norm(table[b] - centre)
            for a, b in zip(firsts, seconds)
        ]
    )
    dev = postprocess.DevPairs({"STS-B": (firsts, seconds, gold), "SICK-R": (firsts, seconds, gold)})
    c = postprocess.choose(encode([f"c{i}" for i in range(500)]), encode(dev.sentences()), dev, "v")
    assert len(c.table) == len(postprocess.candidates(postprocess.GRID, 16)) == 10 and not c.identity  # k < 16 / 2
    assert c.scores["dev"] == max(r["dev"] for r in c.table) and c.scores["dev"] > c.raw["dev"] + 0.3


def test_the_grid_reaches_past_20_components_where_a_view_is_wide_enough():
    """The invertible views chose k = 20, the old grid's edge: a view whose shared directions number 30
    now gets a k that removes them all."""
    rng = np.random.default_rng(2)
    dim, shared = 200, 30
    basis = np.linalg.qr(rng.standard_normal((dim, dim)))[0]
    nuisance, signal = basis[:, :shared], basis[:, shared:]
    table: dict[str, np.ndarray] = {}

    def encode(texts):
        for t in texts:
            if t not in table:
                table[t] = nuisance @ (10.0 * rng.standard_normal(shared)) + signal @ rng.standard_normal(dim - shared)
        return np.stack([table[t] for t in texts]).astype(np.float32)

    a, b = [f"a{i}" for i in range(300)], [f"b{i}" for i in range(300)]
    encode(a + b)
    part = lambda t: table[t] @ signal  # noqa: E731
    gold = np.array([np.dot(part(x), part(y)) / np.linalg.norm(part(x)) / np.linalg.norm(part(y)) for x, y in zip(a, b)])
    dev = postprocess.DevPairs({"STS-B": (a, b, gold), "SICK-R": (a, b, gold)})
    c = postprocess.choose(encode([f"c{i}" for i in range(2000)]), encode(dev.sentences()), dev, "v")
    assert c.k == 40 and c.scores["dev"] > max(r["dev"] for r in c.table if r["k"] <= 20) + 0.1
    assert max(k for _, k in postprocess.candidates(postprocess.GRID, 8)) == 3
    assert max(k for _, k in postprocess.candidates(postprocess.GRID, 50)) == 20  # GloVe 50d kept the old grid
    assert max(k for _, k in postprocess.candidates(postprocess.GRID, 1024)) == 80


def test_choose_keeps_the_identity_when_nothing_helps():
    rng = np.random.default_rng(1)
    table = {f"s{i}": rng.standard_normal(8).astype(np.float32) for i in range(300)}
    encode = lambda texts: np.stack([table[t] for t in texts])  # noqa: E731
    a, b = [f"s{i}" for i in range(100)], [f"s{i}" for i in range(100, 200)]
    gold = np.array([float(np.dot(table[x], table[y]) / np.linalg.norm(table[x]) / np.linalg.norm(table[y])) for x, y in zip(a, b)])
    dev = postprocess.DevPairs({"STS-B": (a, b, gold), "SICK-R": (a, b, gold)})
    c = postprocess.choose(encode([f"s{i}" for i in range(200, 300)]), encode(dev.sentences()), dev, "v")
    assert c.identity and c.scores["dev"] == pytest.approx(1.0)


def test_a_more_complex_candidate_must_beat_a_simpler_one_clearly():
    encode, table = _anisotropic()
    a, b = [f"a{i}" for i in range(100)], [f"b{i}" for i in range(100)]
    fit_on = encode([f"c{i}" for i in range(300)])
    gold = np.arange(100.0)
    dev = postprocess.DevPairs({"STS-B": (a, b, gold), "SICK-R": (a, b, gold)})
    c = postprocess.choose(fit_on, encode(dev.sentences()), dev, "v")
    best = max(r["dev"] for r in c.table)
    simpler = [r for r in c.table if (r["k"], r["center"]) < (c.k, c.center)]
    assert c.scores["dev"] >= best - postprocess.MIN_GAIN and all(r["dev"] < best - postprocess.MIN_GAIN for r in simpler)


def test_postprocess_bundle_writes_maps_keeps_raw_views_and_moves_the_head(tmp_path):
    from tests.service.conftest import write_head

    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny")
    meta = json.loads((bundle / "bundle.json").read_text())
    (bundle / "bundle.json").write_text(json.dumps({**meta, "default_view": "meanmax"}))  # a feature view as default
    write_head(bundle, 8, view="mean")
    corpus = write_corpus(tmp_path / "corpus.txt", toy_documents(40))
    dev = load_dev_pairs(write_senteval(tmp_path / "senteval", n=30), check_counts=False)
    (bundle / "MODEL_CARD.md").write_text(
        "# tiny\n\n| default view | `meanmax` |\n\n## Views\n\n| view | dim | pooling | description |\n"
        "|---|---:|---|---|\n| `mean` | 8 | unsupervised | old |\n\n## Data\n\nsome text\n"
    )
    # only candidates that change the vectors, so the bundle is rewritten whatever dev says
    described = {n: v["description"] for n, v in meta["views"].items()}
    for _ in range(2):  # a second run gives the same bundle: descriptions do not pile up
        choices = postprocess.postprocess_bundle(bundle, corpus, dev, sample=200, log=lambda m: None, grid=[(True, 1), (True, 2)])
        views = json.loads((bundle / "bundle.json").read_text())["views"]
        assert views["mean"]["description"] == f"{described['mean']}; {choices[0].describe()}"
        assert views["mean-raw"]["description"] == f"{described['mean']} (raw: without post-processing)"
    assert [c.view for c in choices] == ["mean"]  # meanmax is a supervised view: left alone
    spec = json.loads((bundle / "bundle.json").read_text())
    assert spec["views"]["mean"]["postprocess"]["key"] == "mean" and "postprocess" not in spec["views"]["mean-raw"]
    assert spec["views"]["mean-raw"]["output"] == "mean" and spec["heads"]["relatedness"]["view"] == "mean-raw"
    assert spec["default_view"] == "mean"  # the only cosine view (the bundle's was meanmax)
    card = (bundle / "MODEL_CARD.md").read_text()
    assert "| default view | `mean` |" in card and "| `mean-raw` | 8 | unsupervised |" in card and "## Data\n\nsome text" in card
    assert "## Post-processing" in card and "**" in card.split("## Post-processing")[1]  # the chosen row in bold
    enc = Encoder.load(bundle)
    texts = ["the cat sat .", "a dog ran", "birds sing in the morning"]
    raw = enc.encode(texts, "mean-raw", normalize=False)
    np.testing.assert_allclose(enc.encode(texts, "mean", normalize=False), enc.postprocess["mean"].apply(raw), atol=1e-6)
    # a second run starts again from the raw outputs: same views, no -raw-raw
    postprocess.postprocess_bundle(bundle, corpus, dev, sample=200, log=lambda m: None, grid=[(False, 0)])
    spec = json.loads((bundle / "bundle.json").read_text())
    assert sorted(spec["views"]) == ["mean", "meanmax"] and spec["heads"]["relatedness"]["view"] == "mean"
    assert {n: v["description"] for n, v in spec["views"].items()} == described
    with np.load(bundle / "postprocess.npz") as z:  # no maps left: only the principal axes of the cosine view
        assert z.files == ["mean.axes"]


def test_a_choice_the_service_would_refuse_leaves_the_bundle_as_it_was(tmp_path, monkeypatch):
    """The spec is checked before the maps are written: new maps beside the old spec would make a bundle
    the server refuses to load."""
    from thoughtvec.service.bundle import format as fmt
    from thoughtvec.service.bundle.errors import BundleError

    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny")
    corpus = write_corpus(tmp_path / "corpus.txt", toy_documents(40))
    dev = load_dev_pairs(write_senteval(tmp_path / "senteval", n=30), check_counts=False)
    run = dict(dev=dev, sample=200, log=lambda m: None)
    postprocess.postprocess_bundle(bundle, corpus, grid=[(True, 1)], **run)
    before = {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()}
    real = fmt.parse_spec

    def refuse_two_components(data, where):
        if any((v.get("postprocess") or {}).get("components") == 2 for v in data["views"].values()):
            raise BundleError(where, "views.mean.postprocess.components", "refused")
        return real(data, where)

    monkeypatch.setattr(postprocess, "parse_spec", refuse_two_components)  # the check postprocess runs before writing
    with pytest.raises(BundleError, match="refused"):
        postprocess.postprocess_bundle(bundle, corpus, grid=[(True, 2)], **run)
    assert {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()} == before
    Encoder.load(bundle)


def test_the_cosine_task_reports_dev_beside_test(tmp_path):
    data = write_senteval(tmp_path, n=30)
    task = datasets.load_task("STSBenchmark", data, check_counts=False)
    sents = sorted(set(task.sentences()))
    rng = np.random.default_rng(0)
    ctx = tasks.Context({s: i for i, s in enumerate(sents)}, rng.standard_normal((len(sents), 8)).astype(np.float32), MODES["quick"])
    res = tasks.cosine(task, ctx)
    dv, te = task.splits["dev"], task.splits["test"]
    dev = cosine_correlation(ctx.of(dv.first), ctx.of(dv.second), np.asarray(dv.scores))
    test = cosine_correlation(ctx.of(te.first), ctx.of(te.second), np.asarray(te.scores))
    assert res["dev_spearman"] == dev["spearman"] and res["dev_pearson"] == dev["pearson"]
    assert res["spearman"] == test["spearman"] and res["n_dev"] == len(dv) and res["n_test"] == len(te)


def test_axes_serve_fewer_dimensions_and_keep_maps_and_fingerprints(tmp_path):
    """``dimensions`` projects a cosine view (after its map) on its principal axes fitted on the corpus; the
    maps and the views' fingerprints (indexes) stay as they were; bad sizes and feature views are refused."""
    from thoughtvec.service.bundle.postprocess import l2_normalize
    from thoughtvec.service.errors import InvalidInput

    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny", dim=16)
    corpus = write_corpus(tmp_path / "corpus.txt", toy_documents(40))
    dev = load_dev_pairs(write_senteval(tmp_path / "senteval", n=30), check_counts=False)
    postprocess.postprocess_bundle(bundle, corpus, dev, sample=200, log=lambda m: None,
                                   grid=[(True, 1)], axes=0)  # fmt: skip
    before = Encoder.load(bundle)
    prints = {v: before.fingerprint(v) for v in before.spec.views}
    assert postprocess.add_axes(bundle, corpus, sample=200, count=12, log=lambda m: None) == {"mean": 12}  # not mean-raw, not meanmax
    enc = Encoder.load(bundle)
    assert {v: enc.fingerprint(v) for v in enc.spec.views} == prints
    np.testing.assert_array_equal(enc.postprocess["mean"].components, before.postprocess["mean"].components)
    texts = ["the cat sat .", "a dog ran in the city", "birds sing"]
    full = enc.encode(texts, "mean", normalize=False)
    want = l2_normalize(full @ enc.axes["mean"].axes[:8].T)
    np.testing.assert_allclose(enc.encode(texts, "mean", dimensions=8), want, atol=1e-6)
    alone = np.stack([enc.encode([t], "mean", dimensions=8)[0] for t in texts])
    np.testing.assert_allclose(alone, want, atol=1e-6)
    np.testing.assert_array_equal(enc.encode(texts, "mean", dimensions=16), enc.encode(texts, "mean"))
    for d, words in [(17, "the limit is 16"), (7, "the smallest is 8"), (13, "keeps 12 principal axes: send 8 to 12, or 16")]:
        with pytest.raises(InvalidInput, match=words):
            enc.encode(texts, "mean", dimensions=d)
    with pytest.raises(InvalidInput, match="feature view"):
        enc.encode(texts, "meanmax", dimensions=8)
    with pytest.raises(InvalidInput, match="without principal axes"):
        enc.encode(texts, "mean-raw", dimensions=8)
    # a full rerun starts again from the raw outputs and fits the axes again
    postprocess.postprocess_bundle(bundle, corpus, dev, sample=200, log=lambda m: None,
                                   grid=[(True, 1)], axes=4)  # fmt: skip
    axes = Encoder.load(bundle).spec.views["mean"].axes
    cut = axes.note.startswith("16 axes: the first coordinates")  # the dev pairs may prefer the cut, kept for every size
    assert axes.count == (16 if cut else 4) and "fitted on 200 training-corpus sentences" in axes.note


def test_the_server_answers_dimensions(tmp_path):
    from tests.service.conftest import serve_test, settings_for

    models = tmp_path / "models"
    make_tiny_bundle(models / "tiny", name="tiny", dim=16)
    postprocess.add_axes(models / "tiny", write_corpus(tmp_path / "c.txt", toy_documents(40)), sample=200, log=lambda m: None)
    with serve_test(settings_for(models, tmp_path / "indexes")) as client:
        r = client.post("/v1/embeddings", json={"input": ["the cat sat .", "a dog"], "dimensions": 8})
        assert r.status_code == 200, r.text
        got = np.array([d["embedding"] for d in r.json()["data"]])
        np.testing.assert_allclose(got, Encoder.load(models / "tiny").encode(["the cat sat .", "a dog"], dimensions=8), atol=1e-6)
        views = client.get("/v1/models/tiny").json()["views"]
        assert views["mean"]["axes"] == 16 and views["meanmax"]["axes"] == 0
        r = client.post("/v1/embeddings", json={"input": "the cat", "dimensions": 4096})
        assert r.status_code == 422 and r.json()["error"]["field"] == "dimensions" and "the limit is 16" in r.json()["error"]["message"]


def test_the_dimensions_measure_scores_each_size_on_dev_and_one_on_test(tmp_path):
    from thoughtvec.training.evaluation import dimensions

    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny", dim=16)
    postprocess.add_axes(bundle, write_corpus(tmp_path / "c.txt", toy_documents(40)), sample=200, count=10, log=lambda m: None)
    m = dimensions.measure(bundle, None, (8, 32), 8, write_senteval(tmp_path / "senteval", n=30), check_counts=False)
    assert m["view"] == "mean" and m["axes"] == 10 and sorted(m["dev"]) == [8, 16]  # 32 is over the view's size
    assert all(-1 <= x <= 1 for pair in m["dev"].values() for x in pair) and set(m["test"]) == {"full", 8}
    assert m["dev"][16][0] == m["dev"][16][1]  # the full vector: projection and cut are both the vector itself


@pytest.mark.parametrize("signal_first", [True, False])
def test_axes_are_the_principal_ones_unless_the_first_coordinates_do_better_on_dev(signal_first):
    """The corpus varies most along coordinates 8-15 (noise to the dev pairs); the dev similarity lives in 0-7 when
    ``signal_first``, else in 8-15: the cut wins the first case, the principal axes the second."""
    from thoughtvec.service.bundle import postprocess as pp

    rng = np.random.default_rng(5)
    corpus = rng.standard_normal((2000, 16)) * np.r_[np.ones(8), 5 * np.ones(8)]
    signal = slice(0, 8) if signal_first else slice(8, 16)
    a, b = [f"a{i}" for i in range(200)], [f"b{i}" for i in range(200)]
    table = {t: rng.standard_normal(16) * np.r_[np.ones(8), 5 * np.ones(8)] for t in a + b}
    gold = np.array([np.dot(table[x][signal], table[y][signal]) for x, y in zip(a, b)])
    dev = postprocess.DevPairs({"STS-B": (a, b, gold), "SICK-R": (a, b, gold)})
    axes, why = postprocess.choose_axes(pp.fit_axes(corpus, 12), np.stack([table[t] for t in dev.sentences()]), dev)
    if signal_first:  # a cut keeps every coordinate, whatever the axes kept
        assert why.startswith("the first coordinates") and (axes == np.eye(16)).all()
    else:
        assert why.startswith("principal axes") and np.abs(axes[:8, 8:]).sum(1).min() > 0.9

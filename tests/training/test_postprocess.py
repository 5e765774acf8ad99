"""Post-processing for cosine views: the choice is made on dev pairs, written into the bundle, and
served by the encoder; the cosine task reports dev beside test."""

import json

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from tests.training.conftest import toy_documents, write_corpus
from tests.training.fixtures.eval.senteval_tiny import write_senteval
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training import postprocess
from thoughtvec.training.evaluation import datasets, tasks
from thoughtvec.training.evaluation.classifiers import MODES, cosine_correlation


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
    data = write_senteval(tmp_path / "senteval", n=30)
    (bundle / "MODEL_CARD.md").write_text(
        "# tiny\n\n| default view | `meanmax` |\n\n## Views\n\n| view | dim | pooling | description |\n"
        "|---|---:|---|---|\n| `mean` | 8 | unsupervised | old |\n\n## Data\n\nsome text\n"
    )
    # only candidates that change the vectors, so the bundle is rewritten whatever dev says
    described = {n: v["description"] for n, v in meta["views"].items()}
    for _ in range(2):  # a second run gives the same bundle: descriptions do not pile up
        choices = postprocess.postprocess_bundle(
            bundle, corpus, sample=200, data_root=data, log=lambda m: None, check_counts=False, grid=[(True, 1), (True, 2)]
        )
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
    postprocess.postprocess_bundle(bundle, corpus, sample=200, data_root=data, log=lambda m: None, check_counts=False, grid=[(False, 0)])
    spec = json.loads((bundle / "bundle.json").read_text())
    assert sorted(spec["views"]) == ["mean", "meanmax"] and spec["heads"]["relatedness"]["view"] == "mean"
    assert {n: v["description"] for n, v in spec["views"].items()} == described
    assert not (bundle / "postprocess.npz").exists()


def test_a_choice_the_service_would_refuse_leaves_the_bundle_as_it_was(tmp_path, monkeypatch):
    """The maps were written before the spec was checked: a refused spec left new maps beside the old
    spec, a bundle the server then refused to load."""
    from thoughtvec.service.bundle import format as fmt
    from thoughtvec.service.bundle.errors import BundleError

    bundle = tmp_path / "tiny"
    make_tiny_bundle(bundle, name="tiny")
    corpus = write_corpus(tmp_path / "corpus.txt", toy_documents(40))
    data = write_senteval(tmp_path / "senteval", n=30)
    run = dict(sample=200, data_root=data, log=lambda m: None, check_counts=False)
    postprocess.postprocess_bundle(bundle, corpus, grid=[(True, 1)], **run)
    before = {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()}
    real = fmt.parse_spec

    def refuse_two_components(data, where):
        if any((v.get("postprocess") or {}).get("components") == 2 for v in data["views"].values()):
            raise BundleError(where, "views.mean.postprocess.components", "refused")
        return real(data, where)

    monkeypatch.setattr(fmt, "parse_spec", refuse_two_components)
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

"""What each bundle is for, chosen on dev: the picks the README's table shows and the model guide the server
serves (``/v1/models``, ``/info``), from the evaluation records (``docs/results/*.json``) and the retrieval
records (``docs/results/retrieval/*.json``).

Per bundle, its dev figures: STS-B and SICK-R dev cosine Spearman of its default view, the best dev macro over
its views (SentEval, 8 tasks) and that view, and the dense nDCG@10 of its default view on the retrieval dev
task. Per use, the pick among every bundle and among those trained here (an imported reference encoder,
family ``transformer``, left out):

- **similarity**: the best mean dev cosine ρ of the default view (what a request without ``view`` gets); among
  bundles within :data:`~thoughtvec.training.export.postprocess.MIN_GAIN` of the best, the smallest on disk (the default
  model's rule, ``report.dev_choices``: among every bundle, this pick is the default model);
- **search**: the best dense nDCG@10 of the default view (``/v1/embeddings`` is dense; OpenAI's model names
  get this model);
- **features**: the best dev macro of any view (the view named);
- **speed**: the narrowest default view (index memory and search time follow the dimension), the smaller on
  disk on a tie.

``thoughtvec eval`` (and ``thoughtvec eval report``) writes the guide beside the bundles it measured
(``models/model_guide.json``: :data:`GUIDE_PATH`) with each bundle's fingerprint, so that the server applies a
choice and shows a bundle's figures only for the bundle they were measured on, and with the choices the server
follows (:func:`choices`): the default model's order, the retrieval order, the hybrid models, and the analyser,
BM25 and fusion settings of the dev retrieval records.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from thoughtvec.paths import MODELS, REPO
from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.service.bundle.fingerprint import fingerprint as view_fingerprint
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.model_guide import GUIDE_FILE
from thoughtvec.training.evaluation.report import IMPORTED_FAMILY, bundle_bytes, dev_macro, flatten
from thoughtvec.training.evaluation.retrieval import slug as retrieval_slug
from thoughtvec.training.export.postprocess import MIN_GAIN

GUIDE_PATH = MODELS / GUIDE_FILE  # the one file the server reads the dev choices from

USES = ("similarity", "search", "features", "speed")
RETRIEVAL_TASK = "scifact-dev"


@dataclass(frozen=True)
class Figures:
    """One bundle's dev figures (None where it has no record) and what the picks need to know of it."""

    name: str
    family: str
    path: str
    default_view: str
    dim: int  # of the default view
    bytes: float  # on disk
    sts_b: float | None
    sick_r: float | None
    macro: float | None  # the best dev macro of any view ...
    macro_view: str | None  # ... and which
    ndcg10: float | None  # dense, default view, on RETRIEVAL_TASK

    @property
    def cosine(self) -> float | None:
        return None if self.sts_b is None or self.sick_r is None else (self.sts_b + self.sick_r) / 2

    @property
    def trained_here(self) -> bool:
        return self.family != IMPORTED_FAMILY

    def dev(self) -> dict:
        """The figures as the server shows them (rounded, absent ones null)."""
        r = lambda v, d: None if v is None else round(v, d)  # noqa: E731
        return {"sts_b_rho": r(self.sts_b, 4), "sick_r_rho": r(self.sick_r, 4), "senteval_macro": r(self.macro, 2),
                "senteval_view": self.macro_view, "scifact_ndcg10": r(self.ndcg10, 4)}  # fmt: skip


def figures(records: Sequence[dict], retrieval: Sequence[dict]) -> dict[str, Figures]:
    """Per evaluated bundle, its :class:`Figures` (``records``: one per view, as ``report.pick`` leaves them)."""
    bundles = [r for r in records if r["kind"] == "bundle"]
    newest = {r["name"]: r for r in sorted(bundles, key=lambda r: r.get("created", ""))}  # the default view as it is now
    out = {}
    for name, latest in newest.items():
        src = latest.get("source", {})
        default = src.get("default_view")
        mine = [r for r in bundles if r["name"] == name]
        at = next((r for r in mine if r["view"] == default), None)
        at_default = flatten(at) if at else {}
        by_macro = [(dev_macro(flatten(r)), r["view"]) for r in mine if dev_macro(flatten(r)) is not None]
        best_macro = max(by_macro, default=(None, None))
        dense = [r for r in retrieval if r["kind"] == "bundle" and r["name"] == name and r["view"] == default
                 and r["mode"] == "dense" and r["task"] == RETRIEVAL_TASK]  # fmt: skip
        out[name] = Figures(
            name, src.get("family", "?"), src.get("path", f"models/{name}"), default, at["dim"] if at else int(src.get("views", {}).get(default, 0)),
            bundle_bytes(latest), at_default.get("STS-B-cos.dev_spearman"), at_default.get("SICK-R-cos.dev_spearman"),
            best_macro[0], best_macro[1], dense[0]["metrics"]["ndcg@10"]["mean"] if dense else None,
        )  # fmt: skip
    return out


def _best(candidates: list[Figures], key) -> Figures | None:
    scored = [f for f in candidates if key(f) is not None]
    return max(scored, key=key) if scored else None


def _similarity(pool: list[Figures]) -> Figures | None:
    """The best dev cosine; within MIN_GAIN of it (the margin post-processing treats as noise), the smallest on disk."""
    top = _best(pool, lambda f: f.cosine)
    if top is None:
        return None
    tied = [f for f in pool if f.cosine is not None and f.cosine >= top.cosine - MIN_GAIN]  # type: ignore[operator]
    return min(tied, key=lambda f: (f.bytes, -f.cosine))  # type: ignore[operator]


def picks(figs: dict[str, Figures], trained_here: bool = False) -> dict[str, Figures | None]:
    """Per use, the bundle chosen on dev (among those trained here, with ``trained_here``)."""
    pool = [f for f in figs.values() if f.trained_here or not trained_here]
    speed = min(pool, key=lambda f: (f.dim, f.bytes), default=None)
    return {
        "similarity": _similarity(pool),
        "search": _best(pool, lambda f: f.ndcg10),
        "features": _best(pool, lambda f: f.macro),
        "speed": speed,
    }


def retrieval_preference(figs: dict[str, Figures]) -> list[str]:
    """Bundles by dense dev nDCG@10 of their default view, best first: the order OpenAI's model names are served in."""
    return [f.name for f in sorted((f for f in figs.values() if f.ndcg10 is not None), key=lambda f: -f.ndcg10)]  # type: ignore[operator]


def hybrid_scores(figs: dict[str, Figures], retrieval: Sequence[dict]) -> dict[str, float]:
    """Per bundle whose hybrid search at its default view beats BM25 alone on the retrieval dev task, that
    hybrid's mean nDCG@10."""
    on_task = [r for r in retrieval if r["task"] == RETRIEVAL_TASK]
    bm25 = [r["metrics"]["ndcg@10"]["mean"] for r in on_task if r["kind"] == "lexical"]
    if not bm25:
        return {}
    hybrid = {
        r["name"]: r["metrics"]["ndcg@10"]["mean"] for r in on_task
        if r["kind"] == "bundle" and r["mode"] == "hybrid" and r["name"] in figs and r["view"] == figs[r["name"]].default_view
    }  # fmt: skip
    return {name: score for name, score in hybrid.items() if score > bm25[0]}


def hybrid_models(figs: dict[str, Figures], retrieval: Sequence[dict]) -> list[str]:
    """The bundles of :func:`hybrid_scores` by name: a new index over one of them searches hybrid unless told
    otherwise."""
    return sorted(hybrid_scores(figs, retrieval))


def rerank_models(figs: dict[str, Figures], retrieval: Sequence[dict]) -> list[str]:
    """The bundles of ``figs`` with a rerank record on dev: rerank's fusion (``search.rerank``) was chosen on them and
    applies to them alone."""
    return sorted({r["name"] for r in retrieval if r["task"] == RETRIEVAL_TASK and r["kind"] == "bundle"
                   and r["mode"] == "rerank" and r["name"] in figs})  # fmt: skip


def default_models(figs: dict[str, Figures]) -> list[str]:
    """Every bundle with dev cosine figures in the order of the default model's rule (:func:`_similarity`, applied
    to what is left): a request naming no model gets the first one served."""
    pool = [f for f in figs.values() if f.cosine is not None]
    out = []
    while pool:
        best = _similarity(pool)
        assert best is not None
        out.append(best.name)
        pool.remove(best)
    return out


def _lexical_settings(record: dict) -> dict | None:
    ranker = record.get("ranker", {})
    lexical = ranker if ranker.get("kind") == "lexical" else ranker.get("lexical")
    return None if lexical is None else {k: v for k, v in lexical.items() if k != "kind"}


def search_settings(retrieval: Sequence[dict]) -> dict[str, dict]:
    """The analyser, BM25 and fusion settings the retrieval dev records were measured with (chosen on that dev set
    by ``python -m thoughtvec.training.evaluation.retrieval_tuning``), as the rankers' defaults take them, and the
    rerank fusion where a rerank record holds one. ``ValueError`` when the records disagree (one measured with other
    settings than the rest: run it again)."""
    on_task = [r for r in retrieval if r["task"] == RETRIEVAL_TASK]
    seen: dict[str, dict[str, list[str]]] = {"lexical": {}, "fusion": {}, "rerank": {}}
    for r in on_task:
        ranker = r.get("ranker", {})
        for part, settings in (("lexical", _lexical_settings(r)), ("fusion", ranker.get("fusion")), ("rerank", ranker.get("rerank"))):
            if settings is not None:
                seen[part].setdefault(json.dumps(settings, sort_keys=True), []).append(retrieval_slug(r))
    for part, variants in seen.items():
        if len(variants) != 1 and (part != "rerank" or variants):  # rerank records are optional; the rest are not
            found = "; ".join(f"{k} in {', '.join(v)}" for k, v in variants.items()) or "none"
            raise ValueError(f"the {RETRIEVAL_TASK} records need one {part} setting, found: {found}")
    lexical, fusion = (json.loads(next(iter(seen[part]))) for part in ("lexical", "fusion"))
    keys = ("method", "lexical_weight", "rrf_k", "depth")
    out = {
        "analyzer": {k: lexical[k] for k in ("stemmer", "stopwords")},
        "bm25": {k: lexical[k] for k in ("method", "k1", "b")},
        "fusion": {k: fusion[k] for k in keys},
    }
    if seen["rerank"]:
        rerank = json.loads(next(iter(seen["rerank"])))
        out["rerank"] = {k: rerank[k] for k in keys} | {"sentence_weight": rerank.get("sentence_weight", 0.0)}
    return out


def choices(figs: dict[str, Figures], retrieval: Sequence[dict]) -> dict:
    """What the server follows, among the bundles of ``figs``: see :mod:`thoughtvec.service.model_guide`."""
    return {
        "default_models": default_models(figs),
        "retrieval_models": retrieval_preference(figs),
        "hybrid_models": hybrid_models(figs, retrieval),
        "rerank_models": rerank_models(figs, retrieval),
        "search": search_settings(retrieval),
    }


def guide(records: Sequence[dict], retrieval: Sequence[dict], fingerprint=None) -> dict:
    """The model guide the server reads: per bundle present under the repository, its fingerprint (default
    view), the uses it is the pick for, among all and among those trained here, and its dev figures."""
    figs = figures(records, retrieval)
    best, here = picks(figs), picks(figs, trained_here=True)
    present = {
        name: f for name, f in sorted(figs.items()) if (REPO / f.path / "bundle.json").is_file()
    }  # evaluated, not here: nothing to serve
    models = {}
    for name, f in present.items():
        bundle = load_bundle(REPO / f.path)
        models[name] = {
            "fingerprint": (fingerprint or view_fingerprint)(bundle, bundle.spec.default_view),
            "best_for": [u for u in USES if best[u] is f],
            "best_trained_here_for": [u for u in USES if here[u] is f and f.trained_here],
            "dev": f.dev(),
        }
    return {
        "generated_by": "thoughtvec eval report",
        "retrieval_task": RETRIEVAL_TASK,
        "choices": choices(present, retrieval),
        "models": models,
    }


def write_guide(records: Sequence[dict], retrieval: Sequence[dict], path: Path | None = None) -> Path:
    """Write the guide beside the bundles (or to ``path``), atomically; unchanged content is not rewritten."""
    path = path or GUIDE_PATH
    text = json.dumps(guide(records, retrieval), indent=1) + "\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        atomic_write_text(path, text)
    return path

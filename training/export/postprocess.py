"""Post-processing for cosine similarity, estimated on training text and chosen on dev data.

For each cosine view of a bundle (every view whose pooling is not ``supervised``): encode a sample
of training-corpus sentences, fit "subtract the mean, remove the top k principal components"
(:mod:`thoughtvec.service.bundle.postprocess`) for every candidate (centre or not, k in :data:`GRID` below half
the view's dimensions), score each
candidate by the cosine Spearman correlation on the **dev** splits of STS-B (1 500 pairs) and SICK
(the 500-pair trial set), and keep the simplest candidate within :data:`MIN_GAIN` of the best. The
bundle's default view then becomes its cosine view best on dev (an embedding service's default
vector is compared by cosine; the feature views stay available by name).
The dev pairs are the caller's (:class:`DevPairs`: the handler reads them with
:func:`thoughtvec.training.evaluation.dev_pairs.load_dev_pairs`); test splits are never read.

The chosen map goes into the bundle (``postprocess.npz`` and the view's ``postprocess`` field),
so the server applies it; the untouched output stays available as ``<view>-raw``. A relatedness
head trained on the raw view is re-pointed to ``<view>-raw``. Running it again re-estimates from
the raw outputs and replaces the maps.

    thoughtvec postprocess --bundle models/uni-skip
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from thoughtvec.service.bundle import postprocess as pp
from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.service.bundle.format import BUNDLE_FILE, Bundle, load_bundle, parse_spec
from thoughtvec.service.bundle.postprocess import AXES, l2_normalize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.export.modelcard import refresh_card, set_card_section
from thoughtvec.training.train.data import corpus_sample

# k up to 80: on a grid ending at 20, six views (the invertible ``de`` and ``de-sif`` views, the
# AAE's ``mean``) chose its edge; a view of dim d tries k < d / 2 (:func:`candidates`). 80 components of a 1024-d view are 0.33 MB of a bundle's 40.
GRID: tuple[tuple[bool, int], ...] = tuple((c, k) for c in (False, True) for k in (0, 1, 2, 3, 5, 10, 20, 40, 80))
MIN_GAIN = 0.002  # a more complex candidate must beat a simpler one by this much dev Spearman (noise: ~0.001)
NPZ = "postprocess.npz"
RAW = "-raw"
SIZES = (8, 32, 64, 128, 256, 512)  # the sizes axes are chosen and measured at (training/evaluation/dimensions.py)


@dataclass(frozen=True)
class DevPairs:
    """The dev pairs of the similarity tasks, ``{task: (first, second, gold scores)}``: STS-B's and SICK-R's
    (:func:`thoughtvec.training.evaluation.dev_pairs.load_dev_pairs` reads them; the caller passes them in)."""

    tasks: dict[str, tuple[list[str], list[str], np.ndarray]]

    def sentences(self) -> list[str]:
        return list(dict.fromkeys(s for a, b, _ in self.tasks.values() for s in (*a, *b)))

    def score(self, vectors: dict[str, np.ndarray]) -> dict[str, float]:
        """Cosine Spearman per task, and their mean (``dev``), for ``{sentence: vector}``."""
        res = {}
        for name, (a, b, gold) in self.tasks.items():
            u = l2_normalize(np.stack([vectors[s] for s in a]))
            v = l2_normalize(np.stack([vectors[s] for s in b]))
            res[name] = float(spearmanr(np.sum(u * v, 1), gold)[0])
        res["dev"] = float(np.mean(list(res.values())))
        return res


@dataclass
class Choice:
    view: str
    center: bool
    k: int
    scores: dict[str, float]  # the chosen candidate's dev scores
    raw: dict[str, float]  # the dev scores of the unprocessed vectors
    table: list[dict]  # every candidate: center, k, dev scores
    map: pp.Postprocess

    @property
    def identity(self) -> bool:
        return not self.center and self.k == 0

    def describe(self) -> str:
        """``mean and top 3 principal components removed``, or ``no post-processing``."""
        parts = (["mean"] if self.center else []) + ([f"top {self.k} principal component{'s' * (self.k != 1)}"] if self.k else [])
        return " and ".join(parts) + " removed" if parts else "no post-processing"


def candidates(grid: Sequence[tuple[bool, int]], dim: int) -> list[tuple[bool, int]]:
    """The candidates of ``grid`` a ``dim``-dimensional view tries: k below half its dimensions (a 50-d
    average still tries 20)."""
    return [(c, k) for c, k in grid if 2 * k < dim]


def choose(fit_on: np.ndarray, dev_raw: np.ndarray, dev: DevPairs, view: str,
           grid: Sequence[tuple[bool, int]] = GRID) -> Choice:  # fmt: skip
    """Fit every candidate on ``fit_on`` (raw vectors of corpus sentences) and keep the best on the dev
    pairs (``dev_raw``: raw vectors of ``dev.sentences()``, in that order); ties keep the simpler."""
    dev_texts = dev.sentences()
    raw = dev.score(dict(zip(dev_texts, dev_raw)))
    grid = candidates(grid, fit_on.shape[1])
    maps = {c: pp.fit_many(fit_on, c, sorted({k for cc, k in grid if cc == c})) for c in {c for c, _ in grid}}
    table: list[dict[str, Any]] = []  # a row: center (bool), k (int), then a dev score (float) per task
    for center, k in sorted(grid, key=lambda ck: (ck[1], ck[0])):  # simplest first
        scores = dev.score(dict(zip(dev_texts, maps[center][k].apply(dev_raw))))
        table.append({"center": center, "k": k, **scores})
    top = max(r["dev"] for r in table)
    pick = next(r for r in table if r["dev"] >= top - MIN_GAIN)  # the simplest within MIN_GAIN of the best
    return Choice(view, pick["center"], pick["k"], {n: pick[n] for n in (*dev.tasks, "dev")}, raw, table, maps[pick["center"]][pick["k"]])


def choose_views(enc, views: Sequence[str], texts: list[str], dev: DevPairs,
                 grid: Sequence[tuple[bool, int]] = GRID) -> dict[str, Choice]:  # fmt: skip
    """:func:`choose` for each of ``views`` of the encoder ``enc``, fitted on the corpus sentences
    ``texts``; every view of them and of the dev sentences in one pass of the graph."""
    vecs = enc.encode_views(texts + dev.sentences(), list(views), normalize=False, batch_size=256)
    return {v: choose(vecs[v][: len(texts)], vecs[v][len(texts) :], dev, v, grid) for v in views}


# what a run appends to a view's description ("; mean and top 3 principal components removed"), also
# the "top 0" of an early version, so a rerun starts from the view's own words
_ADDED = re.compile(r"(?:; (?:mean|top \d+ principal components?)(?: and top \d+ principal components?)? removed)+$")


def postprocess_bundle(bundle_dir: str | Path, corpus: str | Path, dev: DevPairs, sample: int = 20_000,
                       log: Callable[[str], None] = print,
                       grid: Sequence[tuple[bool, int]] = GRID, choose_default: bool = True,
                       axes: int = AXES, axes_for: Sequence[str] | None = None) -> list[Choice]:  # fmt: skip
    """Choose, on the ``dev`` pairs, and write the post-processing of every cosine view of the bundle at ``bundle_dir``; with
    ``choose_default``, the bundle's default view becomes the cosine view best on dev; then, unless ``axes``
    is 0, the principal axes of the views ``axes_for`` (:func:`add_axes`)."""
    bundle_dir = Path(bundle_dir)
    bundle = load_bundle(bundle_dir)
    spec = json.loads((bundle_dir / BUNDLE_FILE).read_text(encoding="utf-8"))
    views = spec["views"]
    # start again from the raw outputs: drop earlier maps, the words they added to descriptions, and their -raw twins
    for name in [n for n in views if n.endswith(RAW) and n[: -len(RAW)] in views]:
        del views[name]
    for v in views.values():
        v.pop("postprocess", None)
        v.pop("axes", None)
        v["description"] = _ADDED.sub("", v.get("description", ""))
    for head in spec.get("heads", {}).values():
        if head["view"].endswith(RAW) and head["view"][: -len(RAW)] in views:
            head["view"] = head["view"][: -len(RAW)]
    # the encoder sees the raw views: the cleaned spec, in memory
    enc = Encoder(Bundle(bundle_dir, parse_spec(spec, str(bundle_dir)), bundle.vocab), providers=["CPUExecutionProvider"])
    texts = corpus_sample(corpus, sample)
    cosine_views = [n for n, v in views.items() if v.get("pooling") != "supervised"]
    chosen = choose_views(enc, cosine_views, texts, dev, grid)
    choices, maps = [], {}
    for name in cosine_views:
        v = views[name]
        c = chosen[name]
        choices.append(c)
        raw_dev = c.raw["dev"]
        log(f"{bundle.name}/{name}: dev Spearman {raw_dev:.4f} raw -> {c.scores['dev']:.4f} with {c.describe()}")
        if c.identity:
            continue
        maps[name] = c.map
        views[f"{name}{RAW}"] = {**v, "description": f"{v.get('description', '')} (raw: without post-processing)".strip()}
        what = c.describe()
        note = (
            f"{what}, estimated on {len(texts):,} training-corpus sentences; chosen on STS-B/SICK dev "
            f"(cosine Spearman {raw_dev:.3f} raw -> {c.scores['dev']:.3f})"
        )
        views[name] = {
            **v,
            "description": f"{v.get('description', '')}; {what}".lstrip("; "),
            "postprocess": {"file": NPZ, "key": name, "center": c.center, "components": c.k, "note": note},
        }
        for head in spec.get("heads", {}).values():
            if head["view"] == name:  # the head was trained on the raw vectors
                head["view"] = f"{name}{RAW}"
    if choose_default and choices:
        best = max(choices, key=lambda c: c.scores["dev"])
        if best.view != spec["default_view"]:
            was = next((f" {c.scores['dev']:.4f}" for c in choices if c.view == spec["default_view"]), " not measured: a feature view")
            log(f"{bundle.name}: default view {spec['default_view']} -> {best.view} (dev Spearman{was} -> {best.scores['dev']:.4f})")
            spec["default_view"] = best.view
    parse_spec(spec, str(bundle_dir))  # never write a spec the service would refuse, nor its maps
    if maps:
        pp.save(bundle_dir / NPZ, maps)
    else:
        (bundle_dir / NPZ).unlink(missing_ok=True)
    atomic_write_text(bundle_dir / BUNDLE_FILE, json.dumps(spec, indent=2, ensure_ascii=False) + "\n")
    Encoder.load(bundle_dir, providers=["CPUExecutionProvider"])  # and check it loads with its maps
    _card_section(bundle_dir, choices, len(texts))
    if axes:
        add_axes(bundle_dir, corpus, sample, axes, axes_for, log, dev)
    refresh_card(bundle_dir)
    return choices


def _card_section(bundle_dir: Path, choices: list[Choice], n: int) -> None:
    card = bundle_dir / "MODEL_CARD.md"
    if not card.is_file() or not choices:
        return
    lines = [
        f"Written by `thoughtvec postprocess`: for each cosine view, the mean and the top k principal components "
        f"are estimated on {n:,} sentences drawn from the training corpus, and the simplest candidate within "
        f"{MIN_GAIN} of the best mean cosine Spearman on the **dev** splits of STS-B and SICK-R is kept (in bold; no "
        "test data is read). The unprocessed output stays available as `<view>-raw`. The default view is the "
        "cosine view best on the same dev pairs.",
        "",
        "| view | centre | k | STS-B dev | SICK-R dev | mean |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for c in choices:
        for r in c.table:
            mark = "**" if (r["center"], r["k"]) == (c.center, c.k) else ""
            lines.append(
                f"| `{c.view}` | {'yes' if r['center'] else 'no'} | {r['k']} | {mark}{r['STS-B']:.4f}{mark} | "
                f"{mark}{r['SICK-R']:.4f}{mark} | {mark}{r['dev']:.4f}{mark} |"
            )
    set_card_section(card, "## Post-processing", "\n".join(lines))


def axes_views(spec) -> list[str]:
    """The views that get principal axes: every cosine view but the ``-raw`` twins (the same output without its map)."""
    return [n for n, v in spec.views.items() if v.pooling != "supervised" and not (n.endswith(RAW) and n[: -len(RAW)] in spec.views)]


def choose_axes(axes: np.ndarray, dev_raw: np.ndarray, dev: DevPairs) -> tuple[np.ndarray, str]:
    """The corpus's principal ``axes`` or, when it scores better on the dev pairs, the view's first coordinates
    (identity rows: a cut): mean cosine Spearman over the :data:`SIZES` below the axes kept; ties keep the axes.
    A cut is stored for every coordinate (identity rows compress to almost nothing, so a view in a bundle with no
    room for its principal axes still serves every size). ``dev_raw``: the view's vectors of ``dev.sentences()``.
    Returns the axes to store and what was chosen, with why."""
    sizes = [d for d in SIZES if d < len(axes)] or [len(axes)]
    texts = dev.sentences()

    def mean_dev(project) -> float:
        return float(np.mean([dev.score(dict(zip(texts, project(d))))["dev"] for d in sizes]))

    pca, cut = mean_dev(lambda d: dev_raw @ axes[:d].T), mean_dev(lambda d: dev_raw[:, :d])
    scores = f"mean STS-B/SICK dev ρ over {sizes}: principal axes {pca:.4f}, first coordinates {cut:.4f}"
    if cut > pca:
        return np.eye(axes.shape[1], dtype=np.float32), f"the first coordinates ({scores})"
    return axes, f"principal axes ({scores})"


def add_axes(bundle_dir: str | Path, corpus: str | Path, sample: int = 20_000, count: int = AXES, views: Sequence[str] | None = None,
             log: Callable[[str], None] = print, dev: DevPairs | None = None) -> dict[str, int]:  # fmt: skip
    """Fit and store the top ``count`` principal axes (at most each view's dim) of ``views`` (default
    :func:`axes_views`), on ``sample`` training-corpus sentences encoded as the view serves them (after its
    post-processing): what ``dimensions`` projects on. With ``dev``, a view whose first coordinates score
    better on the dev pairs keeps those instead (:func:`choose_axes`). The views' maps are kept as they are;
    axes of other views are dropped. Returns ``{view: axes stored}``."""
    bundle_dir = Path(bundle_dir)
    bundle = load_bundle(bundle_dir)
    names = list(views) if views is not None else axes_views(bundle.spec)
    enc = Encoder(bundle, providers=["CPUExecutionProvider"])  # serves each view with its map
    texts = corpus_sample(corpus, sample)
    vecs = enc.encode_views(texts, names, normalize=False, batch_size=256)
    fitted = {n: pp.fit_axes(vecs[n], min(count, enc.dim(n))) for n in names}
    chosen = dict.fromkeys(names, "principal axes (not compared on dev)")
    if dev is not None:
        dev_vecs = enc.encode_views(dev.sentences(), names, normalize=False, batch_size=256)
        for n in names:
            fitted[n], chosen[n] = choose_axes(fitted[n], dev_vecs[n], dev)
    spec = json.loads((bundle_dir / BUNDLE_FILE).read_text(encoding="utf-8"))
    for name, v in spec["views"].items():
        v.pop("axes", None)
        if name in fitted:
            note = (f"{len(fitted[name])} axes: {chosen[name]}; principal axes of the view's L2-normalised vectors "
                    f"(uncentred), fitted on {len(texts):,} training-corpus sentences")  # fmt: skip
            v["axes"] = {"file": NPZ, "key": name, "count": len(fitted[name]), "note": note}
    parse_spec(spec, str(bundle_dir))  # never write a spec the service would refuse
    maps = {v.postprocess.key: enc.postprocess[n] for n, v in bundle.spec.views.items() if v.postprocess}
    pp.save(bundle_dir / NPZ, maps, fitted)
    atomic_write_text(bundle_dir / BUNDLE_FILE, json.dumps(spec, indent=2, ensure_ascii=False) + "\n")
    Encoder.load(bundle_dir, providers=["CPUExecutionProvider"])  # and check it loads with them
    card = bundle_dir / "MODEL_CARD.md"
    if card.is_file():
        kept = "; ".join(f"`{n}` {len(a)}: {chosen[n]}" for n, a in fitted.items())
        set_card_section(card, "## Dimensions", f"Written by `thoughtvec postprocess`: a request with `dimensions` d (8 ≤ d ≤ the "
                         f"axes kept) gets the view's vector projected on its top d principal axes, then normalised. Axes kept: {kept}; "
                         f"fitted on {len(texts):,} training-corpus sentences after each view's post-processing (L2-normalised, "
                         "uncentred, so projections keep cosines), unless the view's first coordinates score better on the "
                         "STS-B/SICK dev pairs. Other views serve only their full size.")  # fmt: skip
    for n, a in fitted.items():
        log(f"{bundle.name}/{n}: {len(a)} axes stored: {chosen[n]}")
    return {n: len(a) for n, a in fitted.items()}

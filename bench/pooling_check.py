"""How to pool the parts of a split input: a retrieval check built from the search sample.

A *passage* is ``--sentences`` consecutive lines of one source in ``service/index/data/search_sample.tsv.gz``
(joined with spaces, so most exceed a bundle's 128-token limit). Each passage is embedded the way
the server embeds a long input (``thoughtvec.service.core.longinput.prepare`` + ``pool``), once per pooling; each of
its sentences, embedded alone, is a query that should find its own passage first among all
passages. Reported: accuracy@1 and MRR per pooling, and ``truncate`` as the baseline.

The sample's sources alternate into two halves by passage (even: dev, odd: held-out); the pooling
was chosen on dev, and held-out confirms it. Run::

    python -m thoughtvec.bench.pooling_check --model models/invertible-bijection --part dev
"""

from __future__ import annotations

import argparse
import gzip
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.format import discover_bundles
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core import registry
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.longinput import POOLING, Prepared, pool, prepare
from thoughtvec.service.model_guide import Guide
from thoughtvec.service.settings import PACKAGE_DATA, Settings

POOLINGS = ("mean-unit", "mean-raw", "token-weighted", "max")


def passages(sample: Path, sentences: int, per_source: int, part: str) -> list[list[str]]:
    """Passages of consecutive lines per source; ``part`` dev takes the even ones, held-out the odd ones."""
    by_source: dict[str, list[str]] = defaultdict(list)
    with gzip.open(sample, "rt", encoding="utf-8") as f:
        for line in f:
            src, _, text = line.rstrip("\n").partition("\t")
            by_source[src].append(text)
    out = []
    for src in sorted(by_source):
        lines = by_source[src]
        chunks = [lines[i : i + sentences] for i in range(0, len(lines) - sentences + 1, sentences)]
        chunks = chunks[0 if part == "dev" else 1 :: 2]
        out.extend(chunks[:per_source])
    return out


def _embed(enc: Encoder, prep: Prepared, n: int, how: str, batch: int = 256) -> np.ndarray:
    order = np.argsort([len(p) for p in prep.parts], kind="stable")  # by length, like the batcher
    raw = np.zeros((len(prep.parts), enc.dim()), np.float32)
    for s in range(0, len(order), batch):
        idx = order[s : s + batch]
        raw[idx] = enc.run_ids([prep.parts[i] for i in idx])
    return l2_normalize(pool(raw, prep, n, how))  # type: ignore[arg-type]


def score(queries: np.ndarray, owner: np.ndarray, docs: np.ndarray) -> tuple[float, float]:
    """accuracy@1 and MRR of each query's own passage among all passages (cosine)."""
    sims = queries @ docs.T  # (q, passages)
    own = sims[np.arange(len(owner)), owner]
    rank = (sims > own[:, None]).sum(1) + 1
    return float((rank == 1).mean()), float((1.0 / rank).mean())


def default_model() -> Path:
    """The bundle the server would make its default, among the bundles under ``models_dir``."""
    settings = Settings()
    guide = Guide.load(settings.models_dir)
    name = registry.pick_default_model(settings, guide, (p.name for p in discover_bundles(settings.models_dir)))
    if name is None:
        raise SystemExit(f"no bundle under {settings.models_dir}: name one with --model")
    return settings.models_dir / name


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="a bundle (default: the default model)")
    ap.add_argument("--sample", type=Path, default=PACKAGE_DATA / "search_sample.tsv.gz")
    ap.add_argument("--sentences", type=int, default=10, help="sentences per passage")
    ap.add_argument("--per-source", type=int, default=60, help="passages per source")
    ap.add_argument("--part", choices=("dev", "held-out"), default="dev")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    model = args.model or default_model()
    enc = Encoder.load(model)
    psg = passages(args.sample, args.sentences, args.per_source, args.part)
    texts = [" ".join(p) for p in psg]
    fields = [f"passage[{i}]" for i in range(len(texts))]
    sents = [s for p in psg for s in p]
    owner = np.repeat(np.arange(len(psg)), [len(p) for p in psg])
    q = _embed(enc, prepare(enc, sents, ["q"] * len(sents), "truncate"), len(sents), POOLING)
    split = prepare(enc, texts, fields, "split")
    over = sum(len(enc.token_ids(t)) > enc.max_tokens for t in texts)
    print(
        f"{model.name}, {args.part}: {len(psg)} passages of {args.sentences} sentences ({over} over the "
        f"{enc.max_tokens}-token limit), {len(sents)} sentence queries"
    )
    print("| pooling | accuracy@1 | MRR |\n|---|---|---|")
    for how in POOLINGS:
        acc, mrr = score(q, owner, _embed(enc, split, len(texts), how))
        print(f"| split, {how}{' (default)' if how == POOLING else ''} | {acc:.3f} | {mrr:.3f} |")
    cut = prepare(enc, texts, fields, "truncate")
    acc, mrr = score(q, owner, _embed(enc, cut, len(texts), POOLING))
    print(f"| truncate (baseline) | {acc:.3f} | {mrr:.3f} |")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()

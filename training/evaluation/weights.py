"""Choose, on dev data, the weight of one more part of a concatenated word-vector source.

For each weight w, the SIF average (Arora et al. 2017) over ``<base>+<part>@w`` (w = 0: the base
alone) is scored on the dev splits only:

* cosine: Spearman on the STS-B and SICK dev pairs, with the post-processing chosen on the same
  pairs as for our bundles (``thoughtvec postprocess``);
* features: the mean dev accuracy over the 8 macro tasks (SentEval's inner folds, the quick
  protocol), with the first principal component removed as in the ``sif`` baselines.

    python -m thoughtvec.training.evaluation.weights --part corpus-w2v --weights 0,0.3,0.5,0.7,1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thoughtvec.training.corpus.wordvecs import load_word_vectors
from thoughtvec.training.evaluation import report
from thoughtvec.training.evaluation.datasets import default_root
from thoughtvec.training.evaluation.sources import GloveAverage


def score(source: str, data_root: Path, seed: int = 1111) -> dict[str, float]:
    """Dev scores of the SIF average over ``source``: cosine (post-processed on dev) and feature accuracy."""
    wv = load_word_vectors(source)  # once for both averages
    cos = GloveAverage(source=source, weighting="sif", postprocess="dev", data_root=data_root, vectors=wv)
    assert cos.choice is not None
    feats = GloveAverage(source=source, weighting="sif", postprocess="first-pc", name=source, vectors=wv)
    macro = report.quick_dev_macro(feats, "mean", data_root, seed)
    return {**{f"{k} dev": v for k, v in cos.choice.scores.items() if k != "dev"}, "cosine dev": cos.choice.scores["dev"],
            "k": cos.choice.k, "macro dev": macro if macro is not None else float("nan")}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m thoughtvec.training.evaluation.weights", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--base", default="glove-6b-50d+spacy-md", help="the source as it is (default: %(default)s)")
    p.add_argument("--part", required=True, help="the part to add, e.g. corpus-w2v or a word2vec text file")
    p.add_argument("--weights", default="0,0.5,1", help="comma-separated weights; 0: the base alone (default: %(default)s)")
    p.add_argument("--data", type=Path, default=None, help="SentEval downstream folder (default: as thoughtvec eval)")
    args = p.parse_args(argv)
    try:
        weights = [float(w) for w in args.weights.split(",")]
    except ValueError:
        print(f"error: --weights must be numbers, got {args.weights!r}", file=sys.stderr)
        return 2
    if any(w < 0 for w in weights):
        print("error: --weights must be 0 or more", file=sys.stderr)
        return 2
    root = args.data or default_root()
    print("| weight | source | k | STS-B dev ρ | SICK-R dev ρ | cosine dev ρ | macro dev (8 tasks, quick) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for w in weights:
        source = args.base if w == 0 else f"{args.base}+{args.part}@{w:g}"
        s = score(source, root)
        print(f"| {w:g} | `{source}` | {s['k']} | {s['STS-B dev']:.4f} | {s['SICK-R dev']:.4f} | {s['cosine dev']:.4f} | {s['macro dev']:.2f} |",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

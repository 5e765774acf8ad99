"""Choose, on dev data, the word vectors of a skip-thought bundle's vocabulary expansion.

For each source, the bundle's expansion is refitted from it (:func:`thoughtvec.training.train.expansion.reexpand`,
no checkpoint needed) into a scratch copy, and the copy's default view, as the graph outputs it
(``<view>-raw`` where post-processing made one), is scored on the dev splits only:

* the fit of the §2.2 map on held-out shared words (R², mean cosine to the trained embedding), and
  the share of the evaluation sets' tokens that read an expanded word;
* cosine: Spearman on the STS-B and SICK dev pairs, post-processing chosen on the same pairs as
  ``thoughtvec postprocess`` does;
* features: the mean dev accuracy over the 8 macro tasks (SentEval's inner folds, the quick protocol).

    python -m thoughtvec.training.evaluation.expansion --bundle models/bi-skip \\
        --source glove-6b-50d --source glove-6b-50d+spacy-md+corpus-w2v@0.5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.corpus.wordvecs import load_word_vectors
from thoughtvec.training.evaluation import report
from thoughtvec.training.evaluation.datasets import all_sentences, default_root
from thoughtvec.training.evaluation.dev_pairs import load_dev_pairs
from thoughtvec.training.evaluation.sources import BundleSource
from thoughtvec.training.export import postprocess
from thoughtvec.training.train.data import corpus_sample
from thoughtvec.training.train.expansion import ExpansionOptions, reexpand


def score(bundle: Path, source: str, data_root: Path, corpus: str, sample: int = 10_000, words: int = 100_000,
          seed: int = 1111, check_counts: bool = True) -> dict:  # fmt: skip
    """Dev scores of ``bundle`` with its expansion refitted from ``source``."""
    with tempfile.TemporaryDirectory(prefix="expansion-") as tmp:
        scratch = Path(tmp) / bundle.name
        fits = reexpand(bundle, scratch, ExpansionOptions(load_word_vectors(source), words=words))
        b = load_bundle(scratch)
        view = b.spec.default_view + postprocess.RAW if b.spec.default_view + postprocess.RAW in b.spec.views else b.spec.default_view
        enc = Encoder(b, providers=["CPUExecutionProvider"])
        texts, dev = corpus_sample(corpus, sample), load_dev_pairs(data_root, check_counts)
        cos = postprocess.choose_views(enc, [view], texts, dev)[view]
        macro = report.quick_dev_macro(BundleSource(scratch), view, data_root, seed, check_counts)
        expanded = expanded_share(b, data_root, check_counts)
    fit = [f["held_out_fit"] for f in fits.values()]
    return {"view": view, "r2": min(f["r2"] for f in fit), "fit cosine": min(f["mean_cosine"] for f in fit), "k": cos.k,
            "center": cos.center, "expanded": expanded, "STS-B dev": cos.scores["STS-B"], "SICK-R dev": cos.scores["SICK-R"], "cosine dev": cos.scores["dev"],
            "macro dev": macro if macro is not None else float("nan")}  # fmt: skip


def expanded_share(bundle, data_root: Path, check_counts: bool = True) -> float:
    """The share of the SentEval sentences' tokens that ``bundle`` reads through its vocabulary expansion."""
    ids = [
        bundle.vocab.index.get(t, -1) for s in all_sentences(data_root, check_counts) for t in tokenize(s, bundle.spec.tokenizer.lowercase)
    ]
    return sum(i >= bundle.spec.vocabulary.trained_size for i in ids) / max(len(ids), 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m thoughtvec.training.evaluation.expansion", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--bundle", type=Path, required=True, help="a skip-thought bundle folder")
    p.add_argument("--source", action="append", required=True, help="word vectors to expand from (repeat; see training/corpus/wordvecs.py)")
    p.add_argument("--words", type=int, default=100_000, help="the N most frequent words of a source make the expanded vocabulary")
    p.add_argument("--corpus", default="data/corpus/corpus.txt", help="training corpus, for the post-processing fit")
    p.add_argument("--sample", type=int, default=10_000, help="corpus sentences the post-processing is fitted on")
    p.add_argument("--data", type=Path, default=None, help="SentEval downstream folder (default: as thoughtvec eval)")
    args = p.parse_args(argv)
    root = args.data or default_root()
    print(
        "| source | held-out R² | held-out cosine | tokens expanded | view | k | STS-B dev ρ | SICK-R dev ρ | cosine dev ρ | macro dev (8 tasks, quick) |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for source in args.source:
        try:
            s = score(args.bundle, source, root, args.corpus, args.sample, args.words)
        except (ValueError, OSError) as e:
            print(f"error: {source}: {e}", file=sys.stderr)
            return 2
        print(f"| `{source}` | {s['r2']:.3f} | {s['fit cosine']:.3f} | {s['expanded']:.1%} | `{s['view']}` | {s['k']}{' (centred)' if s['center'] else ''} | "
              f"{s['STS-B dev']:.4f} | {s['SICK-R dev']:.4f} | {s['cosine dev']:.4f} | {s['macro dev']:.2f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``thoughtvec export``: checkpoint(s) → a bundle folder (ONNX graph, vocabulary, bundle.json, model card).

combine-skip takes two checkpoints (a uni-skip and a bi-skip trained on the same vocabulary).
Skip-thought bundles get vocabulary expansion (§2.2) from GloVe 6B 50d unless ``--expand none``.
Invertible-decoder bundles read more words of the fixed vectors they were trained on (``--input-words``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export checkpoint(s) to a bundle", description=__doc__,
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    p.add_argument("--checkpoint", action="append", required=True, help="runs/<variant>/checkpoint.pt (repeat for combine-skip)")
    p.add_argument("--variant", help="bundle variant (default: the checkpoint's)")
    p.add_argument("--out", help="bundle folder (default models/<name>)")
    p.add_argument("--name", help="bundle name (default: the variant)")
    p.add_argument("--fp32", action="store_true", help="store weights as float32 (default float16)")
    p.add_argument("--corpus", help="corpus for the export checks and the model card (default: the training corpus)")
    p.add_argument("--card-sample", type=int, default=50_000, help="corpus sentences searched for the model card's neighbours")
    p.add_argument(
        "--expand",
        default="glove-6b-50d",
        help="skip-thought vocabulary expansion source: glove-6b-50d, a GloVe/word2vec text file, or none",
    )
    p.add_argument("--expand-words", type=int, default=100_000, help="the N most frequent pretrained words make the expanded vocabulary")
    p.add_argument(
        "--input-words",
        type=int,
        default=150_000,
        help="invertible-decoder bundles read the N most frequent words of their own pretrained vectors besides the trained "
        "vocabulary (chosen on STS-B/SICK dev; 0: the trained vocabulary only); fewer than training read cuts the trained "
        "vocabulary to them and the corpus's frequent words, to keep a bundle of wide vectors within its size",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from thoughtvec.training.export import ExportOptions, export, load_checkpoint

    variant = args.variant or load_checkpoint(args.checkpoint[0])["variant"]
    name = args.name or variant
    options: dict = {"input_words": args.input_words}
    if args.expand != "none":
        from thoughtvec.training.expansion import ExpansionOptions
        from thoughtvec.training.wordvecs import load_word_vectors

        options["expansion"] = ExpansionOptions(load_word_vectors(args.expand), words=args.expand_words)
    opts = ExportOptions(out=Path(args.out or f"models/{name}"), name=name, fp16=not args.fp32, corpus=args.corpus or "",
                         card_sample=args.card_sample, family_options=options)  # fmt: skip
    try:
        out = export(args.checkpoint, variant, opts)
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        print(f"thoughtvec export: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0

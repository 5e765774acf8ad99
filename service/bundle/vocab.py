"""Vocabulary: a token list whose line number is the id. Specials come first.

``vocab.txt`` holds one token per line (tokens never contain whitespace). The first
``trained_size`` ids are the words the model was trained on; ids after that are words added by
vocabulary expansion (skip-thought §2.2) or known only to the fixed word vectors (AAE, invertible
decoders).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from thoughtvec.service.bundle.atomic import atomic_write_text

PAD, UNK, EOS = "<pad>", "<unk>", "<eos>"
SPECIALS = (PAD, UNK, EOS)
# Final: bundle.json's pad_id/unk_id/eos_id are these literals
PAD_ID: Final = 0
UNK_ID: Final = 1
EOS_ID: Final = 2


class Vocabulary:
    """Token <-> id map. Ids 0, 1, 2 are ``<pad>``, ``<unk>``, ``<eos>``."""

    def __init__(self, tokens: Sequence[str]):
        if tuple(tokens[:3]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {tuple(tokens[:3])}")
        self.tokens: list[str] = list(tokens)
        self.index: dict[str, int] = {}
        for i, t in enumerate(self.tokens):
            if not t or any(c.isspace() for c in t):
                raise ValueError(f"vocabulary token {i} is empty or has whitespace: {t!r}")
            if t in self.index:
                raise ValueError(f"vocabulary token {t!r} appears twice (ids {self.index[t]} and {i})")
            self.index[t] = i

    @classmethod
    def from_words(cls, words: Iterable[str]) -> Vocabulary:
        seen = set(SPECIALS)
        out = list(SPECIALS)
        for w in words:
            if w not in seen:
                seen.add(w)
                out.append(w)
        return cls(out)

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        text = Path(path).read_text(encoding="utf-8")
        return cls(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"))

    def save(self, path: str | Path) -> None:
        atomic_write_text(path, "".join(t + "\n" for t in self.tokens))

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def ids(self, tokens: Iterable[str]) -> list[int]:
        get = self.index.get
        return [get(t, UNK_ID) for t in tokens]

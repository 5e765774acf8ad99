"""Text -> token ids for every bundle: one interface over the two tokenizer kinds a bundle can name.

* ``basic-ptb-v1``: :func:`thoughtvec.service.bundle.tokenizer.tokenize` (PTB words) looked up in the
  bundle's ``vocab.txt``, ``<eos>`` appended where the bundle asks (the classic encoders);
* ``hf-tokenizers``: a Hugging Face ``tokenizers`` ``tokenizer.json`` in the bundle (WordPiece, BPE,
  ...), with its own normaliser and special tokens (``[CLS] ... [SEP]`` for BERT encoders).

Both give the ids *with* their special tokens, and say which specials frame every input
(``prefix`` / ``suffix``), so the token limit and long-input splitting keep them on each part:
a cut input keeps its final ``[SEP]`` (or ``<eos>``), and every window of a split one is framed
again (``thoughtvec.service.core.longinput``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from thoughtvec.service.bundle.errors import BundleError
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.bundle.vocab import EOS, UNK_ID, Vocabulary


@dataclass(frozen=True, slots=True)
class Piece:
    """One token as the model sees it: its text, its id, whether it is unknown, whether it is a special, and
    where it came from in the input (character offsets ``text[start:stop]``) when the tokenizer keeps them."""

    text: str
    id: int
    oov: bool
    special: bool = False
    start: int | None = None  # None: a special token, or a tokenizer that keeps no offsets (the word-level one)
    stop: int | None = None


class Tokenizer(Protocol):
    prefix: tuple[int, ...]  # special ids before every input's tokens
    suffix: tuple[int, ...]  # ... and after them
    pad_id: int

    def ids(self, text: str) -> list[int]:
        """The ids of ``text`` with the specials that frame it; not truncated."""
        ...

    def pieces(self, text: str) -> list[Piece]:
        """The tokens behind :meth:`ids`, one per id."""
        ...

    @property
    def vocab_size(self) -> int:
        """The ids the model has: ``0 .. vocab_size - 1``."""
        ...


class WordTokenizer:
    """``basic-ptb-v1``: PTB words in the bundle's vocabulary, ``<eos>`` appended when ``eos`` is given."""

    def __init__(self, vocab: Vocabulary, lowercase: bool, eos: int | None, pad_id: int):
        self.vocab, self.lowercase, self.pad_id = vocab, lowercase, pad_id
        self.prefix: tuple[int, ...] = ()
        self.suffix: tuple[int, ...] = (eos,) if eos is not None else ()

    def ids(self, text: str) -> list[int]:
        return self.vocab.ids(tokenize(text, lowercase=self.lowercase)) + list(self.suffix)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def pieces(self, text: str) -> list[Piece]:
        words = tokenize(text, lowercase=self.lowercase)
        out = [Piece(w, i, i == UNK_ID) for w, i in zip(words, self.vocab.ids(words))]
        return out + [Piece(EOS, i, False, special=True) for i in self.suffix]


class HFTokenizer:
    """``hf-tokenizers``: a ``tokenizer.json``; its own padding and truncation are switched off (the
    bundle's token limit and the batcher do both)."""

    def __init__(self, path: Path, where: str):
        try:
            from tokenizers import Tokenizer as HF  # noqa: PLC0415  # only for a bundle whose tokenizer is tokenizer.json
        except ImportError:  # a serving install without the dependency: say so at load, not as a 500
            raise BundleError(where, "tokenizer.kind", "hf-tokenizers needs the 'tokenizers' package (pip install tokenizers)") from None
        try:
            self.hf = HF.from_file(str(path))
        except Exception as e:  # noqa: BLE001 - the Rust side raises plain Exceptions for a bad file
            raise BundleError(where, "tokenizer.file", f"cannot read {path.name}: {e}") from None
        self.hf.no_padding()
        self.hf.no_truncation()
        probe = "a"
        framed, bare = self.hf.encode(probe).ids, self.hf.encode(probe, add_special_tokens=False).ids
        at = next((i for i in range(len(framed) - len(bare) + 1) if framed[i : i + len(bare)] == bare), None)
        if not bare or at is None:
            raise BundleError(where, "tokenizer.file", f"{path.name} does not keep the tokens of {probe!r} between its special tokens")
        self.prefix, self.suffix = tuple(framed[:at]), tuple(framed[at + len(bare) :])
        unk = getattr(self.hf.model, "unk_token", None)
        self.unk_id = self.hf.token_to_id(unk) if unk else None
        padding = self.hf.token_to_id("[PAD]")
        self.pad_id = padding if padding is not None else 0  # any id does: the graph masks past each input's length

    def ids(self, text: str) -> list[int]:
        return list(self.hf.encode(text).ids)

    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size(with_added_tokens=True)

    def pieces(self, text: str) -> list[Piece]:
        e = self.hf.encode(text)
        return [
            Piece(t, i, i == self.unk_id and not s, bool(s), *((None, None) if s else span))
            for t, i, s, span in zip(e.tokens, e.ids, e.special_tokens_mask, e.offsets)
        ]

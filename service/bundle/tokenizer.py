"""Basic tokenization, shared by training and serving.

The papers use "basic tokenization" only: lower-case, split off punctuation. We follow the Penn
Treebank conventions that SentEval's data and GloVe's vocabulary already use, so the same words
meet the same ids everywhere:

    >>> tokenize("Don't panic -- it's “fine”… see https://example.org!")
    ['do', "n't", 'panic', '--', 'it', "'s", '"', 'fine', '"', '...', 'see', 'https://example.org', '!']

Rules, in order:
1. Unicode NFKC, typographic quotes/dashes/ellipsis mapped to ASCII, control characters dropped.
2. Lower-case (when the spec asks; every bundle we ship does).
3. Split into URLs, numbers (``3.14``, ``1,000``), words (letters/digits with inner ``-`` or ``'``),
   the multi-character punctuation ``...`` and ``--``, and single other characters (punctuation,
   symbols, emoji), dropping whitespace.
4. Split PTB contractions off words: ``n't``, ``'s``, ``'re``, ``'ve``, ``'ll``, ``'d``, ``'m``
   (``can't`` → ``ca n't``, ``won't`` → ``wo n't``, as the treebank does).

The function is linear in the input length; a 10 000-character input takes about a millisecond.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final

__all__ = ["tokenize", "normalize_text", "TOKENIZER_KIND"]

TOKENIZER_KIND: Final = "basic-ptb-v1"  # Final: bundle.json's tokenizer.kind is this literal

# Typographic characters NFKC leaves alone, mapped to what SentEval's PTB files contain.
_TRANSLATE = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "`": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2013": "--",
        "\u2014": "--",
        "\u2015": "--",
        "\u2212": "-",
        "\u2010": "-",
        "\u2011": "-",
        "\u2026": "...",
        "\u00a0": " ",
        "\u200b": "",
        "\ufeff": "",
    }
)

_CONTROL = re.compile(r"[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]")

# Order matters: the first alternative that matches at a position wins.
_TOKEN = re.compile(
    r"""
    (?:https?://|www\.)[^\s<>"']+[^\s<>"'.,;:!?)\]}]   # URL, without trailing punctuation
  | \d+(?:[.,:/]\d+)*                                   # numbers: 3.14  1,000  10:30  1/2
  | '(?:s|re|ve|ll|d|m)(?!\w)                           # a clitic already split off: it 's
  | [^\W_](?:[\w]|[-'](?=[^\W_]))*                      # words with inner - or '
  | \.\.\.+                                             # ellipsis
  | --+                                                 # dash
  | ''                                                  # doubled quote (PTB closing)
  | [^\s]                                               # any other single non-space character
    """,
    re.VERBOSE,
)

# PTB contraction suffixes, split off a word token (checked longest first).
_NT = re.compile(r"^(.+?)(n't)$")
_CLITIC = re.compile(r"^(.+?)('s|'re|'ve|'ll|'d|'m)$")


def normalize_text(text: str) -> str:
    """NFKC + ASCII quotes/dashes + no control characters. Does not change case."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    return _CONTROL.sub(" ", text)


def _split_word(word: str) -> Iterable[str]:
    m = _NT.match(word)
    if m:
        return (m.group(1), m.group(2))
    m = _CLITIC.match(word)
    if m:
        return (m.group(1), m.group(2))
    return (word,)


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Split ``text`` into tokens; ``""`` and whitespace give ``[]``."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize() takes a str, not {type(text).__name__}")
    text = normalize_text(text)
    if lowercase:
        text = text.lower()
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        if tok == "''":
            out.append('"')
        elif "'" in tok and tok[0] != "'" and len(tok) > 1:
            out.extend(_split_word(tok))
        else:
            out.append(tok)
    return out

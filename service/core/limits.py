"""What one request may ask of the server: its count of items (``max_inputs``), each text's characters
(``max_input_chars``, ``max_query_chars``) and the characters of all its texts together (``max_request_chars``),
both checked by :func:`check_texts`,
their tokens (``max_request_tokens``) and the size of its answer (``max_response_bytes``); and from what size its
texts are tokenized on a thread rather than on the event loop (``OFFLOAD_CHARS``).

Each is checked before the work it bounds: characters before any tokenizing, tokens before the model runs
(or ``/tokenize`` lists them), the answer's size before it is written. A request over one gets a 413
``request_too_large`` that names the field and the limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from thoughtvec.service.errors import EmptyInput, InputTooLong, InvalidInput, RequestTooLarge, TooManyInputs

# Requests with more characters than this are tokenized on a thread, not on the event loop: below it, the hand-over
# costs what it would save (docs/BENCHMARKS.md, "Tokenizing off the event loop").
OFFLOAD_CHARS = 8192

# Upper bounds of an answer's JSON, per item: what :func:`check_answer`'s callers multiply.
FLOAT_JSON_BYTES = 25  # one vector value and its comma, as written (-0.012345678901234567,)
TOKEN_JSON_BYTES = 100  # one /tokenize token, less its text: {"text":..,"id":..,"oov":..,"special":..,"start":..,"stop":..}
HIT_JSON_BYTES = 160  # one search hit, less its text and metadata: {"id":..,"score":..,"ranks":{..}}
EXPLAIN_JSON_BYTES = 210  # a hybrid hit's explain: {"dense":{"rank":..,"score":..,"added":..},"lexical":{..},"by":..}
SPARSE_JSON_BYTES = 52  # one sparse value and its comma: {"index":2147483648,"value":1.2345678901234567e-05},


def room(texts: Sequence[str], chars: int, max_tokens: int) -> int:
    """The places in a model's queue a request holds while its ``texts`` (``chars`` characters in all) are
    tokenized: one a text, or one for each ``max_tokens`` characters (the most model-sized parts they can make: a
    token has a character at least, bar the few framing each part), whichever is more. A long text is as much
    work as the parts it is split into, so a flood of long texts meets the queue limit as a flood of short ones does."""
    return max(len(texts), -(-chars // max_tokens))


def check_total(sizes: Iterable[int], fields: Sequence[str], limit: int, unit: str, setting: str) -> int:
    """The sum of ``sizes``; :class:`RequestTooLarge` naming the field that takes it over ``limit``."""
    total = 0
    for size, fld in zip(sizes, fields):
        total += size
        if total > limit:
            raise RequestTooLarge(f"{fld} brings the request to {total} {unit}; the limit is {limit} in all ({setting})", field=fld)
    return total


def check_chars(texts: Sequence[str], fields: Sequence[str], limit: int) -> int:
    """All ``texts``' characters together, within ``max_request_chars``: checked before anything is tokenized."""
    return check_total(map(len, texts), fields, limit, "characters", "max_request_chars")


def check_tokens(counts: Iterable[int], fields: Sequence[str], limit: int) -> int:
    """All tokens of a request together (``counts``: each part's), within ``max_request_tokens``."""
    return check_total(counts, fields, limit, "tokens", "max_request_tokens")


def check_answer(size: int, limit: int, field: str, what: str) -> None:
    """An answer of about ``size`` bytes (``what``: what makes it that large), within ``max_response_bytes``."""
    if size > limit:
        raise RequestTooLarge(
            f"the answer would have about {size} bytes ({what}); the limit is {limit} (max_response_bytes): ask for less {field}",
            field=field,
        )


def check_count(n: int, limit: int, field: str) -> None:
    """413 for more items than a request may carry; 422 for none."""
    if n == 0:
        raise EmptyInput(f"{field} is empty; send at least one item", field=field)
    if n > limit:
        raise TooManyInputs(f"{field} has {n} items; the limit is {limit}", field=field)


@dataclass(frozen=True)
class Texts:
    """A request's texts once every character limit holds: each a string with a visible character, within its
    limit (or cut to it under ``truncate``), and all of them within ``max_request_chars`` (``chars`` in all). What
    the embedding service's way in (``EmbeddingService.encode``) takes: texts are checked once, here."""

    texts: list[str]
    fields: list[str]
    chars: int

    def __len__(self) -> int:
        return len(self.texts)


def check_texts(items: Sequence[Any], fields: Sequence[str], cut: bool, limit: int, setting: str, max_request_chars: int) -> Texts:
    """Each of ``items`` a string, not blank, within ``limit`` characters (``setting`` names it; ``cut``: cut to it
    instead), then all of them within ``max_request_chars``: the request's character limits, in that order, before
    anything is tokenized."""
    out = []
    for item, fld in zip(items, fields):
        if not isinstance(item, str):
            raise InvalidInput(f"{fld} must be a string, got {type(item).__name__}", field=fld)
        if not item.strip():
            raise EmptyInput(f"{fld} is empty or only whitespace; send at least one visible character", field=fld)
        if len(item) > limit:
            if not cut:  # splitting does not lift the character limit: it bounds the work
                raise InputTooLong(f"{fld} has {len(item)} characters; the limit is {limit} ({setting})", field=fld)
            item = item[:limit]
        out.append(item)
    return Texts(out, list(fields), check_total(map(len, out), fields, max_request_chars, "characters", "max_request_chars"))

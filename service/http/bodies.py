"""Request bodies read within bounds: a body's JSON is checked for its shape before anything parses it.

Parsing JSON into Python objects costs time and memory in proportion to the values it holds, and a validator
that reports every problem costs more again: a 16 MB body of 1.35 M unknown keys took seconds to refuse and
held the event loop meanwhile. :func:`scan` walks the body's bytes first, a token at a time with one regular
expression (a string, a run of scalars and commas, or a bracket: a list of a million token ids is a few
tokens), handing the event loop back every :data:`SLICE` tokens, and stops at the first of:

* a key that the route's body does not have (``documents[2].colour``), where the body's model forbids unknown
  keys (every request body does: a typo is never ignored);
* an object with more keys than :attr:`JsonLimits.keys` (metadata, the one object of free keys, is itself held
  to ``max_metadata_bytes``);
* an array with more items than :attr:`JsonLimits.items` (``max_inputs`` texts, ``max_request_tokens`` ids);
* nesting deeper than :attr:`JsonLimits.depth` (``max_metadata_depth`` below the body's own levels);
* a number or literal longer than :data:`MAX_SCALAR` characters (Python refuses integers of over 4,300 digits,
  with a hint about ``sys.set_int_max_str_digits`` that is no client's business).

So the cost of refusing a body is bounded by the place of its first problem, and the parser and validator then
only ever see bodies whose objects and arrays are within the limits. Malformed JSON is not the scan's business:
the parser reports it, with its position.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from fastapi import Request, params
from pydantic import BaseModel, RootModel

from thoughtvec.service.errors import InvalidRequest, RequestTooLarge, TooManyInputs
from thoughtvec.service.settings import Settings

# A run of what lies between strings and brackets: scalars, commas, whitespace (and whatever is malformed: the
# parser's to report). At most RUN_MAX bytes a token, cut at a separator, so no one token holds the loop long.
RUN_MAX = 64 * 1024
RUN = re.compile(rb'[^"\[\]{}:]{1,%d}' % RUN_MAX)
SEPARATORS = b" \t\r\n,"
MAX_SCALAR = 100  # characters of one number or literal: a float64 needs 24
_SEPARATOR = np.zeros(256, bool)
_SEPARATOR[list(SEPARATORS)] = True
SLICE = 4096  # tokens scanned between two turns of the event loop
SMALL_BODY = 4096  # bytes: a body this small is parsed and walked instead (check())
TINY_BODY = 256  # bytes: a body this small is not checked before the validator (at most some 40 keys)
BACKSLASH = 0x5C
NOT_BODY = (params.Depends, params.Path, params.Query, params.Header, params.Cookie)  # an endpoint's other parameters
QUOTE, OPEN_OBJECT, OPEN_ARRAY, CLOSE_OBJECT, CLOSE_ARRAY, COLON, COMMA = b'"{[}]:,'


@dataclass(frozen=True)
class JsonLimits:
    depth: int  # levels of objects and arrays, the body itself being 1
    keys: int  # keys of one object
    items: int  # items of one array

    @classmethod
    def of(cls, settings: Settings) -> JsonLimits:
        """Limits that every valid request is well within under ``settings``, so that the checks that name a
        setting (``max_metadata_depth``, ``max_inputs``) still answer a request just over one: metadata's levels
        below the body's own three (a body, its documents, a document) and four more; as many keys as metadata's
        bytes can hold (``"":0,`` is five); a request's inputs or token ids."""
        return cls(
            depth=settings.max_metadata_depth + 8,
            keys=max(64, settings.max_metadata_bytes // 5 + 1),
            items=max(settings.max_inputs, settings.max_request_tokens),
        )


@dataclass(frozen=True)
class Shape:
    """What a body's model says of one JSON value: the keys an object may have (``None``: any, as metadata's)
    with each key's own shape, and the shape of an array's items."""

    keys: dict[str, Shape | None] | None = None
    item: Shape | None = None


def shape_of(tp: Any) -> Shape | None:
    """The :class:`Shape` of values of type ``tp`` (a request body's annotation): the keys of models that forbid
    unknown ones, through ``Annotated``, unions (the keys of every model they join), lists and root models;
    ``None`` where the type says nothing of keys."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return shape_of(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        shapes = [s for s in map(shape_of, typing.get_args(tp)) if s is not None]
        if not shapes:
            return None
        if any(s.keys is None for s in shapes):
            return None
        keys: dict[str, Shape | None] = {}
        for s in shapes:
            assert s.keys is not None
            for k, v in s.keys.items():
                keys[k] = v if k not in keys or keys[k] == v else None  # one name, two shapes: either holds
        return Shape(keys=keys)
    if origin is list:
        args = typing.get_args(tp)
        item = shape_of(args[0]) if args else None
        return None if item is None else Shape(item=item)
    if isinstance(tp, type) and issubclass(tp, RootModel):
        return shape_of(tp.model_fields["root"].annotation)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp.model_config.get("extra") != "forbid":
            return None
        fields = tp.model_fields.items()
        return Shape(keys={f.alias or name: shape_of(f.annotation) for name, f in fields})
    return None


def endpoint_body(endpoint: Callable[..., Any]) -> tuple[str, Any] | None:
    """``(parameter, type)`` of the one parameter of a route's endpoint that FastAPI reads the JSON body into: not
    the ``Request``, not a dependency, a path, query or header parameter; None where it has none."""
    hints = typing.get_type_hints(endpoint, include_extras=True)
    for name in inspect.signature(endpoint).parameters:
        hint = hints.get(name)
        if hint is None or hint is Request or any(isinstance(m, NOT_BODY) for m in getattr(hint, "__metadata__", ())):
            continue
        return name, hint
    return None


class _Frame:
    """An object or array being scanned."""

    __slots__ = ("is_object", "shape", "count", "key", "expect_key")

    def __init__(self, is_object: bool, shape: Shape | None):
        self.is_object = is_object
        self.shape = shape
        self.count = 0  # keys of an object; commas of an array (its items once it has one)
        self.key: str | None = None  # an object's latest key
        self.expect_key = is_object


def _path(stack: list[_Frame], key: str | None = None) -> str:
    """The field path (``documents[2].metadata``, as error messages name fields) of the value the innermost frame
    is reading, or, with ``key``, of that key of it."""
    out = ""
    for frame in stack:
        if frame.is_object:
            part = key if frame is stack[-1] and key is not None else frame.key
            if part is not None:
                out += f".{part}" if out else part
        else:
            out += f"[{frame.count}]"
    return out or "body"


def _key(raw: bytes, start: int, end: int) -> str:
    token = raw[start:end]
    if b"\\" not in token:
        return token[1:-1].decode("utf-8", "replace")
    try:
        return json.loads(token)
    except ValueError:
        return token[1:-1].decode("utf-8", "replace")


def check(raw: bytes, limits: JsonLimits, shape: Shape | None) -> Iterator[None]:
    """:func:`scan`'s checks of ``raw``, the same problems raised with the same words; a body of at most
    :data:`SMALL_BODY` bytes is parsed whole first (orjson, microseconds) and its values walked, which costs a small
    request a fifth of the scan's time; one orjson refuses (malformed, or an integer past 64 bits) is scanned. A body
    of at most :data:`TINY_BODY` bytes is left to the validator: whatever it holds costs it microseconds."""
    if len(raw) <= TINY_BODY:
        return
    if len(raw) <= SMALL_BODY:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            _walk(value, limits, shape, [])
            return
    yield from scan(raw, limits, shape)


def _walk(value: Any, limits: JsonLimits, shape: Shape | None, path: list[str | int]) -> None:
    """:func:`scan`'s checks over a parsed value, depth first in document order (``path``: where it is)."""
    if isinstance(value, dict | list) and len(path) >= limits.depth:
        _too_deep(path, limits)
    if isinstance(value, dict):
        if len(value) > limits.keys:
            where = _joined(path)
            raise RequestTooLarge(f"{where} has more than {limits.keys} keys; the limit is {limits.keys} in one object", field=where)
        keys = shape.keys if shape is not None else None
        for key, child in value.items():
            if keys is not None and key not in keys:
                where = _joined([*path, key])
                raise InvalidRequest(f"{where}: is not a field of this request (check the spelling)", field=where)
            _walk(child, limits, keys.get(key) if keys is not None else None, [*path, key])
    elif isinstance(value, list):
        if len(value) > limits.items:
            where = _joined(path)
            raise TooManyInputs(f"{where} has more than {limits.items} items; the limit is {limits.items} in one array", field=where)
        item = shape.item if shape is not None else None
        for i, child in enumerate(value):
            _walk(child, limits, item, [*path, i])
    elif isinstance(value, int) and not isinstance(value, bool) and len(str(abs(value))) > MAX_SCALAR:
        where = _joined(path)
        raise InvalidRequest(
            f"{where} has a value of more than {MAX_SCALAR} characters; a number or literal has at most {MAX_SCALAR}", field=where
        )


def _joined(path: list[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "body"


def _too_deep(path: list[str | int], limits: JsonLimits) -> None:
    where = _joined(path)
    raise InvalidRequest(f"{where} is nested more than {limits.depth} levels deep; the limit is {limits.depth}", field=where)


def scan(raw: bytes, limits: JsonLimits, shape: Shape | None) -> Iterator[None]:
    """Walk ``raw`` (a JSON body whose value has ``shape``) for the problems this module's docstring lists,
    raising the first as a domain error naming its field and limit. A generator: it yields every :data:`SLICE`
    tokens, so that its caller can give the event loop a turn between two steps. Nothing is parsed into Python
    objects but object keys.

    A token is a string (found by its closing quote with ``bytes.find``, not a character at a time; an
    unterminated one runs to the end), a bracket or colon, or a run (:data:`RUN`)."""
    stack: list[_Frame] = []
    top: _Frame | None = None
    i, size, n = 0, len(raw), 0
    find, match = raw.find, RUN.match
    while i < size:
        n += 1
        if n == SLICE:
            n = 0
            yield
        c = raw[i]
        if c == QUOTE:
            j = find(b'"', i + 1)
            while j != -1 and raw[j - 1] == BACKSLASH and _escaped(raw, j):
                j = find(b'"', j + 1)
            end = size if j == -1 else j + 1
            if top is not None and top.expect_key:  # only an object expects keys
                _read_key(top, _key(raw, i, end), stack, limits)
            i = end
        elif c == OPEN_OBJECT or c == OPEN_ARRAY:
            if len(stack) >= limits.depth:
                where = _path(stack)
                raise InvalidRequest(f"{where} is nested more than {limits.depth} levels deep; the limit is {limits.depth}", field=where)
            top = _Frame(c == OPEN_OBJECT, shape if top is None else _child_shape(top))
            stack.append(top)
            i += 1
        elif c == CLOSE_OBJECT or c == CLOSE_ARRAY:
            if stack:
                stack.pop()
                top = stack[-1] if stack else None
            i += 1
        elif c == COLON:
            i += 1
        else:  # a run of scalars, commas and whitespace
            end = match(raw, i).end()  # type: ignore[union-attr]  # c starts a run
            if end - i == RUN_MAX and end < size and raw[end] not in b'"[]{}:':  # cut: end it after its last separator
                cut = max(raw.rfind(bytes([s]), i, end) for s in SEPARATORS)
                end = cut + 1 if cut != -1 else end  # none in 64 KiB: one long scalar, which the run's check refuses
            if top is not None:
                _read_run(raw, i, end, top, stack, limits)
            i = end


def _escaped(raw: bytes, j: int) -> bool:
    """Whether the quote at ``j`` is escaped: an odd number of backslashes before it."""
    k = j - 1
    while raw[k] == BACKSLASH:
        k -= 1
    return (j - 1 - k) % 2 == 1


def _read_key(top: _Frame, key: str, stack: list[_Frame], limits: JsonLimits) -> None:
    top.count += 1
    if top.count > limits.keys:
        where = _path(stack[:-1])
        raise RequestTooLarge(f"{where} has more than {limits.keys} keys; the limit is {limits.keys} in one object", field=where)
    keys = top.shape.keys if top.shape is not None else None
    if keys is not None and key not in keys:
        where = _path(stack, key)
        raise InvalidRequest(f"{where}: is not a field of this request (check the spelling)", field=where)
    top.key, top.expect_key = key, False


def _read_run(raw: bytes, start: int, end: int, top: _Frame, stack: list[_Frame], limits: JsonLimits) -> None:
    if end - start > MAX_SCALAR and (at := _long_scalar(raw, start, end)) is not None:
        if not top.is_object:
            top.count += raw.count(b",", start, at)  # the long value's own index
        where = _path(stack)
        raise InvalidRequest(
            f"{where} has a value of more than {MAX_SCALAR} characters ({raw[at : at + 16].decode('latin-1')}...); "
            f"a number or literal has at most {MAX_SCALAR}",
            field=where,
        )
    commas = raw.count(b",", start, end)
    if top.is_object:
        top.expect_key = top.expect_key or commas > 0
    elif commas:
        top.count += commas
        if top.count >= limits.items:  # commas + 1 items
            where = _path(stack[:-1])
            raise TooManyInputs(f"{where} has more than {limits.items} items; the limit is {limits.items} in one array", field=where)


def _long_scalar(raw: bytes, start: int, end: int) -> int | None:
    """Where the first scalar of more than :data:`MAX_SCALAR` characters in the run ``raw[start:end]`` begins, or
    None. With numpy over the run's bytes: a regular expression looking for one takes a step or more per byte."""
    run = np.frombuffer(raw, np.uint8, count=end - start, offset=start)
    seps = np.flatnonzero(_SEPARATOR[run])  # (separators,)
    bounds = np.concatenate(([-1], seps, [end - start]))
    gaps = np.diff(bounds) - 1  # each scalar's length (0 between two separators)
    i = int(np.argmax(gaps))
    return start + int(bounds[i]) + 1 if gaps[i] > MAX_SCALAR else None


def _child_shape(parent: _Frame) -> Shape | None:
    shape = parent.shape
    if shape is None:
        return None
    if parent.is_object:
        return shape.keys.get(parent.key) if shape.keys is not None and parent.key is not None else None
    return shape.item

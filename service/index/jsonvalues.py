"""Checks on JSON values from requests, so that whatever is stored can always be sent back.

Python's ``json`` accepts what no encoder can return: lone surrogates (``"\\ud800"`` is valid JSON
but not Unicode; UTF-8 cannot encode it), ``NaN`` and ``Infinity`` literals (the responses are
strict JSON), and nesting deeper than the encoder's recursion limit. Each check walks the value
with an explicit stack (never recursion) and names the first offending path.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from thoughtvec.service.errors import InvalidInput

_SURROGATE = re.compile("[\ud800-\udfff]")


def _children(value: Any, path: str):
    if isinstance(value, dict):
        return [(v, f"{path}.{k}" if path else str(k), k) for k, v in value.items()]
    if isinstance(value, list):
        return [(v, f"{path}[{i}]", None) for i, v in enumerate(value)]
    return []


def _any_surrogate(value: Any) -> bool:
    """Whether any string (value or key) holds a lone surrogate: every request body is checked, so this walk
    builds no paths, and an ASCII string (most of them) is passed over without a search."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not v.isascii() and _SURROGATE.search(v):
                return True
        elif isinstance(v, dict):
            for k in v:
                if isinstance(k, str) and not k.isascii() and _SURROGATE.search(k):
                    return True
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def lone_surrogate_path(value: Any, path: str = "") -> str | None:
    """The path of the first string (value or key) holding a lone surrogate; ``None`` if there is none."""
    if not _any_surrogate(value):
        return None
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                return p
            continue
        for child, cpath, key in reversed(_children(v, p)):
            if isinstance(key, str) and _SURROGATE.search(key):
                return p or "body"
            stack.append((child, cpath))
    return None


def reject_lone_surrogates(value: Any) -> None:
    """422 naming the field whose text is not valid Unicode."""
    if (path := lone_surrogate_path(value)) is not None:
        where = path or "body"
        raise InvalidInput(
            f"{where} contains a lone surrogate (\\ud800-\\udfff): not valid Unicode, so it cannot be stored or returned as UTF-8",
            field=where,
        )


def check_metadata(meta: dict[str, Any] | None, field: str, max_bytes: int, max_depth: int) -> None:
    """Finite numbers, at most ``max_depth`` levels of objects and arrays, at most ``max_bytes`` of UTF-8 JSON."""
    if meta is None:
        return
    stack = [(meta, field, 1)]
    while stack:
        v, p, depth = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidInput(f"{p} is {v}; metadata numbers must be finite (JSON has no NaN or Infinity)", field=p)
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                raise InvalidInput(
                    f"{field} is nested more than {max_depth} levels deep (at {p}); the limit is {max_depth} (max_metadata_depth)",
                    field=field,
                )
            stack.extend((c, cp, depth + 1) for c, cp, _ in _children(v, p))
    size = len(json.dumps(meta, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8"))
    if size > max_bytes:
        raise InvalidInput(f"{field} is {size} bytes of UTF-8 JSON; the limit is {max_bytes} (max_metadata_bytes)", field=field)

"""Fixtures the HTTP tests share."""

from __future__ import annotations

import pytest

from thoughtvec.service.http import fastpath


@pytest.fixture
def taken(monkeypatch) -> list[bytes]:
    """The bodies the embeddings fast path parsed (in this process: the route and fast-path ways)."""
    seen: list[bytes] = []
    original = fastpath.parse

    def spy(body: bytes):
        seen.append(body)
        return original(body)

    monkeypatch.setattr(fastpath, "parse", spy)
    return seen

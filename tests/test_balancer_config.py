"""docker/milvus/nginx.conf retries reads on another replica and never resends a write it has sent
(docs/deployment.md, "What the balancer retries"): every POST route of the API must fall in the
location its kind needs, so a new route is placed there too."""

from __future__ import annotations

import re

import pytest

from thoughtvec.paths import REPO
from thoughtvec.service.http.routes import ACCESS, Access

CONF = REPO / "docker" / "milvus" / "nginx.conf"


def locations() -> list[tuple[str, str, set[str]]]:
    """(modifier, pattern, proxy_next_upstream conditions) of each location block, in file order."""
    text = re.sub(r"#[^\n]*", "", CONF.read_text(encoding="utf-8"))
    found = []
    for m in re.finditer(r"location\s+(?:(=|~)\s+)?(\S+)\s*\{([^}]*)\}", text):
        nxt = re.search(r"proxy_next_upstream\s+([^;]+);", m.group(3))
        found.append((m.group(1) or "", m.group(2), set(nxt.group(1).split()) if nxt else set()))
    return found


def location_for(path: str) -> set[str]:
    """nginx's choice: an exact match, else the first regex that matches, else the longest prefix."""
    blocks = locations()
    for mod, pattern, conditions in blocks:
        if mod == "=" and path == pattern:
            return conditions
    for mod, pattern, conditions in blocks:
        if mod == "~" and re.search(pattern, path):
            return conditions
    prefixes = [(pattern, conditions) for mod, pattern, conditions in blocks if not mod and path.startswith(pattern)]
    return max(prefixes, key=lambda p: len(p[0]))[1]


# every POST route, and whether it writes (an index write needs an admin key: the access table says which)
POSTS = [(re.sub(r"\{[^}]+\}", "x", path), access is Access.admin) for (method, path), access in ACCESS.items() if method == "POST"]


def test_the_api_has_post_reads_and_post_writes():
    assert {write for _, write in POSTS} == {True, False}, POSTS


@pytest.mark.parametrize("path,write", POSTS, ids=[p for p, _ in POSTS])
def test_each_post_route_is_retried_as_its_kind_allows(path, write):
    conditions = location_for(path)
    if write:  # an index write: passed on only when nothing was sent
        assert "non_idempotent" not in conditions, f"{path} is a write: nginx must not resend it once sent"
    else:  # a read: any replica, also after a 503 (loading) or a replica dying mid-request
        assert {"error", "timeout", "http_429", "http_503", "non_idempotent"} <= conditions, f"{path} is a read: {conditions}"

"""The HTTP half of docker/ci-smoke.sh: call the containerised server on 127.0.0.1 and check its answers.

    python3 smoke_client.py --port P --state FILE before    # embeddings, similarity, default-index search,
                                                            # then a new index with documents (saved to FILE)
    python3 smoke_client.py --port P --state FILE after     # after a restart: that index is still there
    python3 smoke_client.py --port P --state FILE replica   # a read-only replica: same answers, writes refused

Standard library only: it runs on the CI host's own python3, outside any virtual environment.
Every wait is bounded; any failed check exits 1 with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

INDEX = "ci-smoke"
# Words the tiny test bundle knows, so each document has its own vector under it too.
DOCS = [
    {"id": "cat", "text": "the cat sat on the table .", "metadata": {"n": 1}},
    {"id": "dog", "text": "a dog ran in the city", "metadata": {"n": 2}},
    {"id": "river", "text": "the old man read a letter by the river .", "metadata": {"n": 3}},
    {"id": "car", "text": "they drove a red car fast from the house", "metadata": {"n": 4}},
]


class Check(Exception):
    pass


def call(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, _json(r.read())
    except urllib.error.HTTPError as e:
        return e.code, _json(e.read())


def _json(raw: bytes) -> dict:
    try:
        return json.loads(raw or b"{}")
    except ValueError:  # an unhandled server error is plain text
        return {"text": raw.decode("utf-8", "replace")}


def ok(port: int, method: str, path: str, body: dict | None = None, status: int = 200) -> dict:
    code, answer = call(port, method, path, body)
    if code != status:
        raise Check(f"{method} {path}: {code} (wanted {status}): {json.dumps(answer)[:400]}")
    return answer


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise Check(what)
    print(f"  ok: {what}")


def wait_index(port: int, name: str, timeout_s: float) -> None:
    """The default index is built in the background after /ready; wait (bounded) until it is served."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = ok(port, "GET", "/ready").get("indexes", {}).get(name)
        if state == "ready":
            return
        if time.monotonic() > deadline:
            raise Check(f"index '{name}' not ready after {timeout_s:.0f} s (state: {state})")
        time.sleep(1)


def search_top(port: int, index: str, query: str, k: int = 3) -> list[dict]:
    answer = ok(port, "POST", "/v1/search", {"index": index, "query": query, "k": k})
    return answer["results"][0]


def before(port: int, state: Path, index_wait_s: float) -> None:
    models = ok(port, "GET", "/v1/models")
    default = next(m for m in models["data"] if m["default"])
    print(
        f"models: {[m['id'] for m in models['data']]} (default {default['id']}, dim {default['dimension']}, "
        f"providers {default['providers']}); devices: {models.get('devices')}"
    )

    texts = [DOCS[0]["text"], DOCS[1]["text"]]
    emb = ok(port, "POST", "/v1/embeddings", {"input": texts})
    vecs = [d["embedding"] for d in emb["data"]]
    print(f"POST /v1/embeddings: {len(vecs)} vectors of {len(vecs[0])} floats, usage {emb['usage']}")
    expect(
        len(vecs) == 2 and all(len(v) == default["dimension"] for v in vecs), "embeddings: one vector per input, of the model's dimension"
    )
    expect(all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4 for v in vecs), "embeddings: L2-normalised")

    sim = ok(port, "POST", "/v1/similarity", {"pairs": [[texts[0], texts[0]], texts]})
    scores = [d["score"] for d in sim["data"]]
    print(f"POST /v1/similarity: scores {[round(s, 4) for s in scores]}")
    expect(abs(scores[0] - 1) < 1e-4 and -1 <= scores[1] < scores[0], "similarity: a text with itself scores 1, another less")

    wait_index(port, "default", index_wait_s)
    hits = search_top(port, "default", DOCS[2]["text"])
    print(f"POST /v1/search (default index): {[(h['id'], round(h['score'], 3), h['text'][:40]) for h in hits]}")
    expect(len(hits) == 3 and hits[0]["score"] >= hits[-1]["score"], "search: 3 hits from the default index, best first")

    created = ok(port, "POST", "/v1/indexes", {"name": INDEX}, status=201)
    added = ok(port, "POST", f"/v1/indexes/{INDEX}/documents", {"documents": DOCS})
    print(f"POST /v1/indexes + documents: index '{INDEX}' ({created['model']}/{created['view']}), {added['documents']} documents")
    hits = search_top(port, INDEX, DOCS[3]["text"], k=2)
    expect(hits[0]["id"] == "car" and hits[0]["metadata"] == {"n": 4}, f"search: '{INDEX}' finds the document by its own text")
    state.write_text(json.dumps({"documents": added["documents"], "top": hits[0]}))


def after(port: int, state: Path) -> None:
    saved = json.loads(state.read_text())
    stats = ok(port, "GET", f"/v1/indexes/{INDEX}")
    print(f"GET /v1/indexes/{INDEX}: {stats['documents']} documents, wal_bytes {stats['wal_bytes']}")
    expect(stats["documents"] == saved["documents"], f"index '{INDEX}' kept its {saved['documents']} documents across the restart")
    hits = search_top(port, INDEX, DOCS[3]["text"], k=2)
    expect(
        hits[0]["id"] == saved["top"]["id"] and abs(hits[0]["score"] - saved["top"]["score"]) < 1e-5,
        "search after the restart: same top hit, same score",
    )
    expect(ok(port, "GET", "/ready")["indexes"].get("default") == "ready", "default index loaded from the volume, not rebuilt")


def replica(port: int, state: Path) -> None:
    """A second server on the same index volume mounted read-only: it serves searches, refuses writes."""
    after(port, state)
    code, answer = call(port, "POST", f"/v1/indexes/{INDEX}/documents", {"documents": [{"text": "the dog sat", "id": "new"}]})
    print(f"POST /v1/indexes/{INDEX}/documents on the read-only replica: {code} {json.dumps(answer)[:160]}")
    expect(code >= 400, "read-only replica: an index write is refused")
    expect(
        ok(port, "GET", f"/v1/indexes/{INDEX}")["documents"] == json.loads(state.read_text())["documents"],
        "read-only replica: the refused write changed nothing",
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=["before", "after", "replica"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--state", type=Path, required=True, help="what `before` saw, for `after` to compare")
    p.add_argument("--index-wait", type=float, default=300, help="seconds to wait for the default index")
    args = p.parse_args()
    try:
        if args.phase == "before":
            before(args.port, args.state, args.index_wait)
        else:
            (after if args.phase == "after" else replica)(args.port, args.state)
    except (Check, OSError, KeyError, StopIteration, ValueError) as e:
        print(f"SMOKE FAILED ({args.phase}): {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

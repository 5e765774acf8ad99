"""The HTTP half of docker/ci/balancer-run.sh: replicas on one Milvus behind nginx, called through the balancer.

    python3 balancer_client.py setup  --port LB --state FILE            # embeddings, the built default index,
                                                                        # a new index with documents
    python3 balancer_client.py load   --port LB --state FILE --watch ADDR --kill-mark F --healthy-mark G
                                      # embeddings, searches and adds on three threads until the killed
                                      # replica ADDR has been back for a while; every answer recorded
    python3 balancer_client.py verify --port LB --state FILE --replica P [--replica P ...]
                                      # every acknowledged document is found, through the balancer and
                                      # on each replica directly

`load` fails when any read (embeddings, search) got anything but 200; a write may fail while a
replica dies under it (nginx does not resend a POST it has sent: docs/deployment.md), and is then
only recorded; every write that was acknowledged must be found by `verify`. nginx's
``$upstream_addr`` comes back in ``X-Upstream`` (the CI's nginx.conf adds it): two addresses mean
nginx retried the request on the other replica.

Standard library only: it runs on the CI host's own python3. Every wait and loop is bounded.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

INDEX = "ci-balancer"
WORDS = (
    "apple river castle engine forest garden harbor island jacket kettle lantern meadow needle orchard "
    "pencil quarry rocket saddle tunnel umbrella valley window yacht zebra anchor bridge candle desert "
    "falcon glacier hammer igloo jungle kayak ladder magnet nickel oyster parrot quartz ribbon statue "
    "tractor unicorn violin walnut xylophone yogurt zipper"
).split()
READS = ("embeddings", "search")


class Check(Exception):
    pass


def text_for(n: int) -> str:
    """A sentence of its own for document n: four words picked by n's digits in base len(WORDS)."""
    w, picks = len(WORDS), []
    for i in range(4):
        picks.append(WORDS[(n // w**i + 7 * i) % w])
    return f"document {n} : the {picks[0]} near the {picks[1]} and a {picks[2]} with a {picks[3]} ."


def call(port: int, method: str, path: str, body: dict | None = None, timeout: float = 120) -> tuple[int, dict, str]:
    """(status, JSON answer, nginx's upstream address(es) or '')."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, _json(r.read()), r.headers.get("X-Upstream", "")
    except urllib.error.HTTPError as e:
        return e.code, _json(e.read()), e.headers.get("X-Upstream", "") if e.headers else ""


def _json(raw: bytes) -> dict:
    try:
        return json.loads(raw or b"{}")
    except ValueError:  # nginx's own error pages are HTML
        return {"text": raw.decode("utf-8", "replace")[:200]}


def ok(port: int, method: str, path: str, body: dict | None = None, status: int = 200) -> dict:
    code, answer, _ = call(port, method, path, body)
    if code != status:
        raise Check(f"{method} {path}: {code} (wanted {status}): {json.dumps(answer)[:400]}")
    return answer


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise Check(what)
    print(f"  ok: {what}", flush=True)


def add(port: int, docs: list[dict]) -> tuple[int, dict]:
    code, answer, _ = call(port, "POST", f"/v1/indexes/{INDEX}/documents", {"documents": docs})
    return code, answer


def setup(port: int, state: Path) -> None:
    models = ok(port, "GET", "/v1/models")
    default = next(m for m in models["data"] if m["default"])
    emb = ok(port, "POST", "/v1/embeddings", {"input": [text_for(1), text_for(2)]})
    expect(
        [len(d["embedding"]) for d in emb["data"]] == [default["dimension"]] * 2,
        f"embeddings through the balancer: 2 vectors of {default['dimension']} ({default['id']})",
    )
    listed = [i["name"] for i in ok(port, "GET", "/v1/indexes")["data"]]
    expect("default" in listed, f"the default index built by thoughtvec-build is listed ({listed})")
    hits = ok(port, "POST", "/v1/search", {"index": "default", "query": "the king rode into battle .", "k": 3})["results"][0]
    expect(len(hits) == 3, f"search of the default index: 3 hits ({[h['text'][:30] for h in hits]})")

    created = ok(port, "POST", "/v1/indexes", {"name": INDEX}, status=201)
    docs = [{"id": f"s{n}", "text": text_for(n), "metadata": {"n": n}} for n in range(40)]
    code, answer = add(port, docs)
    expect(code == 200 and answer.get("documents") == len(docs), f"index '{INDEX}' ({created['model']}): {len(docs)} documents added")
    top = ok(port, "POST", "/v1/search", {"index": INDEX, "query": text_for(17), "k": 1})["results"][0][0]
    expect(top["id"] == "s17", "search of the new index finds a document by its own text")
    state.write_text(json.dumps({"acked": [d["id"] for d in docs], "texts": {d["id"]: d["text"] for d in docs}}))


def mark(path: Path | None) -> float | None:
    """The time written in a mark file (balancer-run.sh moves it in whole), or None before it is there."""
    try:
        return float(path.read_text()) if path else None
    except (OSError, ValueError):
        return None


class Load:
    """Three request loops through the balancer; each answer is appended to ``records``."""

    def __init__(self, port: int, watch: str, kill_mark: Path, healthy_mark: Path, after: int, max_s: float):
        self.port, self.watch, self.kill_mark, self.healthy_mark = port, watch, kill_mark, healthy_mark
        self.after, self.deadline = after, time.monotonic() + max_s
        self.records: list[dict] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.acked: dict[str, str] = {}
        self.next_doc = 1000
        self.crashed: list[str] = []

    def record(self, route: str, t0: float, code: int, answer: dict, upstream: str) -> None:
        with self.lock:
            self.records.append(
                {
                    "t": t0,
                    "s": time.time() - t0,
                    "route": route,
                    "code": code,
                    "upstream": upstream,
                    "error": "" if code == 200 else json.dumps(answer)[:200],
                }
            )

    def done(self) -> bool:
        if self.stop.is_set() or time.monotonic() > self.deadline:
            return True
        back = mark(self.healthy_mark)
        if back is None:
            return False
        with self.lock:
            served = sum(1 for r in self.records if r["t"] > back and r["upstream"].split(",")[-1].strip() == self.watch)
        return served >= self.after

    def loop(self, route: str) -> None:
        try:
            self._loop(route)
        except Exception as e:  # a loop that stops early must fail the run, not shrink it
            self.crashed.append(f"{route}: {type(e).__name__}: {e}")
            raise

    def _loop(self, route: str) -> None:
        n = 0
        while not self.done():
            n += 1
            t0 = time.time()
            try:
                if route == "embeddings":
                    code, answer, up = call(self.port, "POST", "/v1/embeddings", {"input": [text_for(n * 16 + i) for i in range(16)]})
                elif route == "search":
                    code, answer, up = call(self.port, "POST", "/v1/search", {"index": INDEX, "query": text_for(n % 40), "k": 3})
                else:
                    with self.lock:
                        doc_n = self.next_doc
                        self.next_doc += 1
                    doc = {"id": f"w{doc_n}", "text": text_for(doc_n)}
                    code, answer, up = call(self.port, "POST", f"/v1/indexes/{INDEX}/documents", {"documents": [doc]})
                    if code == 200:
                        with self.lock:
                            self.acked[doc["id"]] = doc["text"]
            except OSError as e:  # the balancer itself did not answer
                code, answer, up = 0, {"text": f"{type(e).__name__}: {e}"}, ""
            self.record(route, t0, code, answer, up)
            time.sleep(0.05)


def load(args: argparse.Namespace) -> None:
    state = json.loads(args.state.read_text())
    run = Load(args.port, args.watch, args.kill_mark, args.healthy_mark, args.after, args.max_seconds)
    threads = [threading.Thread(target=run.loop, args=(r,), daemon=True) for r in (*READS, "add")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.max_seconds + 180)
    if time.monotonic() > run.deadline:
        raise Check(f"the killed replica {args.watch} did not serve {args.after} requests within {args.max_seconds:.0f} s")

    if run.crashed:
        raise Check(f"request loops stopped early: {run.crashed}")
    killed, back = mark(args.kill_mark), mark(args.healthy_mark)
    if killed is None or back is None:
        raise Check(f"no kill or no recovery recorded ({args.kill_mark}, {args.healthy_mark})")
    rec = sorted(run.records, key=lambda r: r["t"])
    by = Counter((r["route"], r["code"]) for r in rec)
    retried = [r for r in rec if "," in r["upstream"]]
    print(f"load: {len(rec)} requests through the balancer: {dict(sorted(by.items()))}")
    print(f"  retried by nginx on the other replica (two upstream addresses): {len(retried)}")
    for r in retried[:8]:
        print(f"    {r['route']:10s} +{r['t'] - killed:6.2f} s  {r['code']}  {r['upstream']}")
    answered = [r for r in rec if r["t"] > killed and r["upstream"].split(",")[-1].strip() == args.watch]
    first_any = answered[0]["t"] - killed if answered else None
    first_ok = next((r["t"] - killed for r in answered if r["code"] == 200), None)
    print(f"  replica {args.watch} killed at +0 s; healthy again (/ready 200) at +{back - killed:.1f} s")
    print(
        f"  its first answer through nginx at +{first_any:.1f} s, its first 200 at +{first_ok:.1f} s"
        if first_ok is not None
        else "  no 200 from it"
    )
    print(
        f"  its answers after the kill (503 = warming up; retried on the other replica where nginx may): {Counter(r['code'] for r in answered)}"
    )
    during = [r for r in rec if killed <= r["t"] <= back]
    print(f"  while it was down or loading: {len(during)} requests, by status {dict(Counter(r['code'] for r in during))}")
    bad_reads = [r for r in rec if r["route"] in READS and r["code"] != 200]
    bad_writes = [r for r in rec if r["route"] == "add" and r["code"] != 200]
    for r in (bad_reads + bad_writes)[:10]:
        print(f"    {r['route']:10s} +{r['t'] - killed:6.2f} s  {r['code']}  {r['upstream']}  {r['error']}")
    print(f"  writes: {len(run.acked)} acknowledged, {len(bad_writes)} not")
    state["acked"] += sorted(run.acked)
    state["texts"].update(run.acked)
    args.state.write_text(json.dumps(state))
    expect(not bad_reads, "no read (embeddings, search) answered anything but 200 through the kill and the restart")
    expect(bool(run.acked), "writes were acknowledged during the run")


def verify(args: argparse.Namespace) -> None:
    state = json.loads(args.state.read_text())
    acked, texts = state["acked"], state["texts"]
    for port, where in [(args.port, "balancer")] + [(p, f"replica 127.0.0.1:{p}") for p in args.replica]:
        count = ok(port, "GET", f"/v1/indexes/{INDEX}")["documents"]
        expect(count >= len(acked), f"{where}: '{INDEX}' holds {count} documents, every one of the {len(acked)} acknowledged")
    missing = []
    for i, doc_id in enumerate(acked):
        port = ([args.port] + args.replica)[i % (1 + len(args.replica))]
        hits = ok(port, "POST", "/v1/search", {"index": INDEX, "query": texts[doc_id], "k": 3})["results"][0]
        if doc_id not in [h["id"] for h in hits]:
            missing.append(doc_id)
    expect(not missing, f"each of the {len(acked)} acknowledged documents is found by its own text (missing: {missing[:10]})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("phase", choices=["setup", "load", "verify"])
    p.add_argument("--port", type=int, required=True, help="the balancer's port on 127.0.0.1")
    p.add_argument("--state", type=Path, required=True, help="the acknowledged documents, phase to phase")
    p.add_argument("--watch", default="", help="load: the killed replica's address as nginx names it (127.0.0.1:PORT)")
    p.add_argument("--kill-mark", type=Path, help="load: a file holding the time of the kill")
    p.add_argument("--healthy-mark", type=Path, help="load: a file holding the time the killed replica was healthy again")
    p.add_argument("--after", type=int, default=10, help="load: stop once the killed replica has answered this many")
    p.add_argument("--max-seconds", type=float, default=600, help="load: give up after this long")
    p.add_argument("--replica", type=int, action="append", default=[], help="verify: a replica's own port")
    args = p.parse_args()
    try:
        if args.phase == "setup":
            setup(args.port, args.state)
        elif args.phase == "load":
            load(args)
        else:
            verify(args)
    except (Check, OSError, KeyError, StopIteration, ValueError, IndexError) as e:
        print(f"BALANCER RUN FAILED ({args.phase}): {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

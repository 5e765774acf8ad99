"""The walk of one ``POST /v1/embeddings`` from its route to the model's queue, counted by a profiler hook.

    python -m thoughtvec.bench.request_walk --bundle models/mean-max-aae

Serves the bundle in process (the app called through httpx's ASGI transport on this thread, no socket), sends one
one-sentence request to warm every path, then a second with ``sys.setprofile`` on: from the moment the route's
endpoint (``create_embeddings``) is entered until the batcher's ``embed_ids`` is, every function of ``thoughtvec``
entered is a *stop* (a coroutine resumed after an await is not entered again), and a stop that is no longer on the
way to the queue when it is reached returned before it: a *return* (its caller waited for its answer before going
on). Prints the stops in order, indented by depth, then the two counts: what docs/development.md records. Run it with
another checkout's interpreter, from its folder, to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from thoughtvec.service.http.app import create_app
from thoughtvec.service.settings import Settings

START, END = "create_embeddings", "embed_ids"


async def walk(client: httpx.AsyncClient, body: dict) -> tuple[list[tuple[int, str]], int]:
    """([(depth, module.function)] of the stops in order, returns before the queue) for one request."""
    stops: list[tuple[int, str]] = []
    seen: dict[int, int] = {}  # id(frame) -> depth, of our frames entered
    held: list[FrameType] = []  # those frames, kept alive: a freed frame's id is given to the next
    state: dict[str, Any] = {"on": False, "end": None}

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if state["end"] is not None or event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        name = frame.f_code.co_name
        if not module.startswith("thoughtvec.") or name.startswith("<") or id(frame) in seen:
            return
        state["on"] = state["on"] or name == START
        if not state["on"]:
            return
        depth = 0
        caller = frame.f_back
        while caller is not None and id(caller) not in seen:
            caller = caller.f_back
        if caller is not None:
            depth = seen[id(caller)] + 1
        seen[id(frame)] = depth
        held.append(frame)
        stops.append((depth, f"{module.removeprefix('thoughtvec.service.')}.{frame.f_code.co_qualname}"))
        if name == END:
            chain: set[int] = set()
            f: FrameType | None = frame
            while f is not None:
                chain.add(id(f))
                f = f.f_back
            state["end"] = sum(1 for fid in seen if fid in chain)

    sys.setprofile(hook)
    try:
        r = await client.post("/v1/embeddings", json=body)
    finally:
        sys.setprofile(None)
    assert r.status_code == 200, r.text
    return stops, len(stops) - (state["end"] or 0)


async def run(bundle: Path, tmp: Path) -> tuple[list[tuple[int, str]], int]:
    models = tmp / "models"
    models.mkdir()
    (models / bundle.name).symlink_to(bundle.resolve())
    settings = Settings(models_dir=models, index_dir=tmp / "idx", build_default_index=False, warmup=False)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://walk") as client:
            while (await client.get("/ready")).status_code != 200:
                await asyncio.sleep(0.05)
            body = {"input": "the cat sat on the mat .", "model": bundle.name}
            await client.post("/v1/embeddings", json=body)
            return await walk(client, body)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, default=Path("models/mean-max-aae"))
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tv-walk-") as tmp:
        stops, returns = asyncio.run(run(args.bundle, Path(tmp)))
    for depth, name in stops:
        print(f"{'  ' * depth}{name}")
    print(f"\n{len(stops)} stops from the route to the queue (both counted), {returns} returns before the queue")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

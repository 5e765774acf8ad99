"""What each step of the HTTP layer costs a one-sentence ``POST /v1/embeddings``, in process (no socket).

    python -m thoughtvec.bench.http_steps --bundle models/mean-max-aae

The embedding service is stubbed out (it answers a fixed vector at once), so only the framework, the route and
the answer's rendering count. Each row is an ASGI callable driven in a loop, µs a request, best of ``--rounds``
rounds of ``--requests`` requests after a warm-up:

- ``raw ASGI``: read the body, ``validate_json`` a body model, answer;
- ``Starlette router``: one Starlette ``Route``, ``Request.body()``, a ``Response``;
- ``FastAPI, body model``: FastAPI's own handler with the body model as the endpoint's parameter (its body parsing
  and dependency solving), then with a ``Request`` dependency and one service dependency, as routes are written;
- ``the app as served``: ``create_app`` on ``--bundle`` (the door, the express lane, the route, the render).

Run from another checkout's environment, ``--app-only`` measures that checkout's app the same way (its
``create_app``), for a before/after in one run. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from fastapi import Depends, FastAPI, Request, Response
from pydantic import BaseModel, ConfigDict
from starlette.routing import Route, Router

ASGI = Callable[..., Awaitable[None]]  # an ASGI application: (scope, receive, send)
ANSWER = b'{"object":"list","data":[{"object":"embedding","embedding":[0.1,0.2],"index":0}],"model":"m","usage":{}}'


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    input: str | list
    model: str | None = None
    normalize: bool = True


async def service(body: Body) -> bytes:  # the embedding service, stubbed
    return ANSWER


def _scope(body: bytes) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/embeddings",
        "raw_path": b"/v1/embeddings",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"x"), (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
        "state": {},
    }


async def cost(app: ASGI, body: bytes, requests: int, rounds: int) -> float:
    """µs a request, the best of ``rounds``, after a warm-up whose first answer must be a 200."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    for _ in range(min(500, requests)):
        await app(_scope(body), receive, send)
    if sent[0].get("status") != 200:
        raise SystemExit(f"the warm-up was answered {sent[:2]}")
    best = float("inf")
    for _ in range(rounds):
        sent.clear()
        started = time.perf_counter()
        for _ in range(requests):
            await app(_scope(body), receive, send)
        best = min(best, (time.perf_counter() - started) / requests * 1e6)
    return best


async def raw(scope: dict, receive: Callable[[], Awaitable[dict]], send: Callable[[dict], Awaitable[None]]) -> None:
    message = await receive()
    answer = await service(Body.model_validate_json(message["body"]))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


async def _starlette_endpoint(request: Any) -> Response:
    return Response(await service(Body.model_validate_json(await request.body())), media_type="application/json")


async def parse(request: Request) -> Body:
    return Body.model_validate_json(await request.body())


async def the_service(request: Request) -> int:
    return 1


def fastapi_app(with_dependencies: bool) -> FastAPI:
    app = FastAPI()
    if with_dependencies:

        @app.post("/v1/embeddings")
        async def endpoint(body: Annotated[Body, Depends(parse)], s: Annotated[int, Depends(the_service)]) -> Response:
            return Response(await service(body), media_type="application/json")

    else:

        @app.post("/v1/embeddings")
        async def endpoint_body(body: Body) -> Response:
            return Response(await service(body), media_type="application/json")

    return app


async def served_app(bundle: Path) -> float:
    """The app as ``thoughtvec serve`` builds it on ``bundle``, its embedding service answering a fixed vector."""
    from thoughtvec.service.core.results import Encoded  # noqa: PLC0415  # the checkout's own, where --app-only runs elsewhere
    from thoughtvec.service.http.app import create_app  # noqa: PLC0415
    from thoughtvec.service.settings import Settings  # noqa: PLC0415

    tmp = Path(tempfile.mkdtemp(prefix="tv-http-steps-"))
    (tmp / "models").mkdir()
    (tmp / "models" / bundle.name).symlink_to(bundle.resolve())
    app = create_app(Settings(models_dir=tmp / "models", index_dir=tmp / "indexes", build_default_index=False, warmup=False))
    body = json.dumps({"input": "the cat sat on the mat .", "model": bundle.name, "encoding_format": "base64"}).encode()
    async with app.router.lifespan_context(app):
        core = app.state.core
        while not core.embedding.registry.started:
            await asyncio.sleep(0.05)
        encoded = Encoded(bundle.name, "default", np.ones((1, 256), np.float32), 8, 0, 0)

        async def stub(*args: Any, **kwargs: Any) -> Encoded:
            return encoded

        core.embedding.embeddings = stub
        return await cost(app, body, ARGS.requests, ARGS.rounds)


ARGS = argparse.Namespace(requests=3000, rounds=7)


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, default=Path("models/mean-max-aae"))
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--app-only", action="store_true", help="only the app as served (for another checkout's environment)")
    p.parse_args(namespace=ARGS)
    body = json.dumps({"input": "the cat sat on the mat ."}).encode()
    print("| what | µs a request |\n|---|---:|")
    if not ARGS.app_only:
        steps: list[tuple[str, ASGI]] = [
            ("raw ASGI: read the body, `validate_json`, answer", raw),
            ("a Starlette router, `Request.body()`", Router([Route("/v1/embeddings", _starlette_endpoint, methods=["POST"])])),
            ("FastAPI's own handler, the body model a parameter", fastapi_app(False)),
            ("FastAPI's own handler, a `Request` dependency and a service dependency", fastapi_app(True)),
        ]
        for name, app in steps:
            print(f"| {name} | {await cost(app, body, ARGS.requests, ARGS.rounds):.1f} |", flush=True)
    print(f"| the app as served (`{ARGS.bundle.name}`) | {await served_app(ARGS.bundle):.1f} |")


if __name__ == "__main__":
    asyncio.run(main())

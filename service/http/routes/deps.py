"""Dependencies shared by the routers (``Annotated`` aliases, as the FastAPI template does)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Annotated, Any

from fastapi import Depends, Path, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import ClientDisconnect
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.indexing import IndexService
from thoughtvec.service.http.middleware import json_bytes
from thoughtvec.service.http.peer_schemas import CohereErrorBody, TeiErrorBody
from thoughtvec.service.http.schemas import ErrorBody, Usage
from thoughtvec.service.model_guide import default_model


# async: a sync dependency would hop to a thread
async def get_core(request: Request) -> Core:
    return request.app.state.core


async def get_embedding(request: Request) -> EmbeddingService:
    return request.app.state.core.embedding


async def get_indexes(request: Request) -> IndexService:
    return request.app.state.core.indexes


CoreDep = Annotated[Core, Depends(get_core)]  # the whole service: readiness, metrics
EmbeddingDep = Annotated[EmbeddingService, Depends(get_embedding)]  # models and what they compute
IndexDep = Annotated[IndexService, Depends(get_indexes)]  # search and index management


def json_body(body: BaseModel, usage: Usage | None = None) -> Response:
    """``body`` (a response schema, already validated by its construction) written with the standard ``json``
    module, as the routes always have (floats as Python writes them), with the usage headers when it has usage."""
    return Response(json_bytes(body.model_dump()), media_type="application/json", headers=usage.headers() if usage else None)


class JsonRoute(APIRoute):
    """A route whose JSON body is validated once, from its bytes, by pydantic's own JSON parser.

    FastAPI's handler decodes the body with ``json``, validates the resulting objects, then solves the
    endpoint's dependencies, inside two exit stacks and a second exception wrapper, for each request. For an
    endpoint of the plain shape the API's compute routes have (one body model, the ``Request``, dependencies
    that read only the request, an answer that is a ``Response``) that is most of what a small request costs.
    This route does the same work directly: a JSON body that validates goes to the endpoint with its
    dependencies called on the request, and an exception goes to the app's handlers as any route's does.
    Anything else (a body that does not validate, another content type, dependency overrides in force) goes to
    FastAPI's own handler with the body as it came, so its answer, error messages included, is FastAPI's. An
    endpoint of another shape is served by FastAPI's handler alone. Routers use it for every route
    (``route_class``)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any):
        super().__init__(path, endpoint, **kwargs)
        plain = _plain_shape(self)
        # direct: the gate (``thoughtvec.service.http.gate``) may call ``self.app`` without FastAPI's router
        self.direct = plain is not None and getattr(self, "max_body_size", None) is None  # the app's body limit applies
        if self.direct:
            assert plain is not None
            self.app = _direct(FileStack(self.app), self.endpoint, *plain)


def _direct(standard: ASGIApp, endpoint: Callable[..., Any], model: type[BaseModel], body_name: str, request_name: str | None,
            dependencies: list[tuple[str, Callable]]) -> ASGIApp:  # fmt: skip
    """The ASGI app of a :class:`JsonRoute` of the plain shape; ``standard`` is FastAPI's (with its file stack)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if not _json_content(scope) or scope["app"].dependency_overrides:
            await standard(scope, receive, send)
            return
        raw = await read_body(receive)
        request = Request(scope, receive, send)
        request._body = raw  # Starlette's own cache of the body: ``request.body()`` gives it again
        try:
            body = model.model_validate_json(raw)
        except ValueError:  # pydantic's ValidationError, or JSON that is not UTF-8: FastAPI says which
            await standard(scope, _replay(raw, receive), send)
            return
        kwargs: dict[str, Any] = {body_name: body}
        if request_name is not None:
            kwargs[request_name] = request
        for name, call in dependencies:
            kwargs[name] = await call(request)
        response = await endpoint(**kwargs)
        await response(scope, receive, send)

    return app


async def read_body(receive: Receive) -> bytes:
    """A request's whole body, from its ``http.request`` messages (Starlette's ``Request.body`` without its stream)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class FileStack:
    """FastAPI's per-request exit stack (``fastapi_middleware_astack``: the files of a form body are closed on it),
    which its route handlers expect in the scope, where the scope has none yet."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if "fastapi_middleware_astack" in scope:
            await self.app(scope, receive, send)
            return
        async with AsyncExitStack() as stack:
            scope["fastapi_middleware_astack"] = stack
            await self.app(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body, already read, given again first."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


def _plain_shape(route: APIRoute) -> tuple[type[BaseModel], str, str | None, list[tuple[str, Callable]]] | None:
    """(body model, its parameter, the ``Request`` parameter, [(parameter, dependency)]) of an endpoint of the plain
    shape :class:`JsonRoute` answers directly; None for any other."""
    d = route.dependant
    body = route.body_field
    if (
        body is None
        or len(d.body_params) != 1
        or d.path_params
        or d.query_params
        or d.header_params
        or d.cookie_params
        or d.response_param_name
        or d.background_tasks_param_name
        or d.security_scopes_param_name
        or d.websocket_param_name
        or d.http_connection_param_name
        or not inspect.iscoroutinefunction(route.endpoint)
    ):
        return None
    model = d.body_params[0].field_info.annotation
    if not (inspect.isclass(model) and issubclass(model, BaseModel)) or d.body_params[0].name != body.name:
        return None  # a union of bodies, or one embedded under its name: FastAPI's handler
    answer = typing.get_type_hints(route.endpoint).get("return")
    if not (inspect.isclass(answer) and issubclass(answer, Response)):
        return None
    dependencies = []
    for dep in d.dependencies:
        reads_request_only = dep.request_param_name is not None and not (
            dep.dependencies or dep.path_params or dep.query_params or dep.header_params or dep.cookie_params or dep.body_params
        )
        if not (reads_request_only and dep.name and dep.call is not None and inspect.iscoroutinefunction(dep.call)):
            return None
        dependencies.append((dep.name, dep.call))
    return model, body.name, d.request_param_name, dependencies


def _json_content(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"application/json"
    return False


class DocumentRoute(JsonRoute):
    """``…/documents/{doc_id}``, whose id is never ``delete``: that path is ``…/documents/delete``'s (POST), so
    ``DELETE …/documents/delete`` is a 405 naming POST, as the schema says, not the deletion of a document."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE and child.get("path_params", {}).get("doc_id") == "delete":
            return Match.NONE, {}
        return match, child


# Path parameters with the values "Try it out" fills in (the default index; the index the examples create).
IndexName = Annotated[str, Path(description="index name", examples=["default"])]
NewIndexName = Annotated[str, Path(description="index name", examples=["notes"])]
ModelName = Annotated[str, Path(description="bundle or alias", examples=[default_model()])]
DocId = Annotated[str, Path(description="document id", examples=["n1"])]


# Documented error answers, in the shape of the routes' ``responses=``.
Responses = dict[int | str, dict[str, Any]]
ERRORS: Responses = {code: {"model": ErrorBody} for code in (400, 401, 404, 413, 422, 429, 503)}
WRITE_ERRORS: Responses = ERRORS | {403: {"model": ErrorBody}, 409: {"model": ErrorBody}}
# TEI's and Cohere's routes answer errors in their API's shape (``middleware.family``)
TEI_ERRORS: Responses = {code: {"model": TeiErrorBody} for code in ERRORS}
COHERE_ERRORS: Responses = {code: {"model": CohereErrorBody} for code in ERRORS}

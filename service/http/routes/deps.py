"""Dependencies shared by the routers (``Annotated`` aliases, as the FastAPI template does), the path parameters
and the documented error answers."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Request, Response
from pydantic import BaseModel

from thoughtvec.service.core.catalog import Catalog
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.index_admin import IndexAdmin
from thoughtvec.service.core.index_ingest import IngestService
from thoughtvec.service.core.index_search import SearchService
from thoughtvec.service.core.scoring import ScoringService
from thoughtvec.service.core.sparse import SparseService
from thoughtvec.service.http.error_answers import json_bytes
from thoughtvec.service.http.openapi import DEFAULT_MODEL
from thoughtvec.service.http.peer_schemas import CohereErrorBody, TeiErrorBody
from thoughtvec.service.http.schemas import ErrorBody, Usage


# async: a sync dependency would hop to a thread
async def get_core(request: Request) -> Core:
    return request.app.state.core


async def get_embedding(request: Request) -> EmbeddingService:
    return request.app.state.core.embedding


async def get_scoring(request: Request) -> ScoringService:
    return request.app.state.core.scoring


async def get_sparse(request: Request) -> SparseService:
    return request.app.state.core.sparse


async def get_catalog(request: Request) -> Catalog:
    return request.app.state.core.catalog


async def get_index_admin(request: Request) -> IndexAdmin:
    return request.app.state.core.indexes


async def get_search(request: Request) -> SearchService:
    return request.app.state.core.search


async def get_ingest(request: Request) -> IngestService:
    return request.app.state.core.ingest


CoreDep = Annotated[Core, Depends(get_core)]  # the whole service: readiness, metrics
EmbeddingDep = Annotated[EmbeddingService, Depends(get_embedding)]  # the models' vectors
ScoringDep = Annotated[ScoringService, Depends(get_scoring)]  # similarity and rerank
SparseDep = Annotated[SparseService, Depends(get_sparse)]  # BM25's sparse vectors
CatalogDep = Annotated[Catalog, Depends(get_catalog)]  # what is served and how it reads text
IndexAdminDep = Annotated[IndexAdmin, Depends(get_index_admin)]  # indexes made, dropped, listed, described
SearchDep = Annotated[SearchService, Depends(get_search)]  # search and the map
IngestDep = Annotated[IngestService, Depends(get_ingest)]  # documents added and deleted


def json_body(body: BaseModel, usage: Usage | None = None) -> Response:
    """``body`` (a response schema, already validated by its construction) written with the standard ``json``
    module, as the routes always have (floats as Python writes them), with the usage headers when it has usage."""
    return Response(json_bytes(body.model_dump()), media_type="application/json", headers=usage.headers() if usage else None)


# Path parameters with the values "Try it out" fills in (the default index; the index the examples create).
IndexName = Annotated[str, Path(description="index name", examples=["default"])]
NewIndexName = Annotated[str, Path(description="index name", examples=["notes"])]
ModelName = Annotated[str, Path(description="bundle or alias", examples=[DEFAULT_MODEL])]
DocId = Annotated[str, Path(description="document id (any but `delete`)", examples=["n1"])]


# Documented error answers, in the shape of the routes' ``responses=``.
Responses = dict[int | str, dict[str, Any]]
ERRORS: Responses = {code: {"model": ErrorBody} for code in (400, 401, 404, 413, 422, 429, 503)}
WRITE_ERRORS: Responses = ERRORS | {403: {"model": ErrorBody}, 409: {"model": ErrorBody}}
# TEI's and Cohere's routes answer errors in their API's shape (``error_answers.family``)
TEI_ERRORS: Responses = {code: {"model": TeiErrorBody} for code in ERRORS}
COHERE_ERRORS: Responses = {code: {"model": CohereErrorBody} for code in ERRORS}

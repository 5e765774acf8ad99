"""Index management: create, list, stats, drop; add and delete documents."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from service.http.routes.deps import ERRORS, WRITE_ERRORS, AdminDep, CoreDep, DocId, IndexName, NewIndexName, usage_headers
from service.http.schemas import (
    AddDocumentsRequest,
    AddDocumentsResponse,
    CreateIndexRequest,
    DeleteDocumentsRequest,
    DeleteDocumentsResponse,
    IndexList,
    IndexStats,
)

router = APIRouter(prefix="/v1/indexes", tags=["indexes"])


@router.get("", response_model=IndexList, responses=ERRORS)
async def list_indexes(core: CoreDep) -> dict:
    """Every index with its stats, and any being built."""
    return core.list_indexes()


@router.post("", status_code=201, response_model=IndexStats, responses=WRITE_ERRORS, dependencies=[AdminDep])
async def create_index(body: CreateIndexRequest, core: CoreDep) -> dict:
    """A new empty index for one model and view, with a FAISS factory string and a metric."""
    return await core.create_index(body)


@router.get("/{name}", response_model=IndexStats, responses=ERRORS)
async def index_stats(name: IndexName, core: CoreDep) -> dict:
    return core.store.stats(name)


@router.delete("/{name}", status_code=204, responses=WRITE_ERRORS, dependencies=[AdminDep])
async def drop_index(name: NewIndexName, core: CoreDep) -> Response:
    """Delete the index and its files."""
    await core.drop_index(name)
    return Response(status_code=204)


@router.post("/{name}/documents", response_model=AddDocumentsResponse, responses=WRITE_ERRORS, dependencies=[AdminDep])
async def add_documents(name: NewIndexName, body: AddDocumentsRequest, core: CoreDep) -> JSONResponse:
    """Embed and add documents (`text`, optional `id` and `metadata`); durable once answered.

    Ids must be new (409 otherwise); missing ids are generated. Long texts are split and pooled like any input.
    """
    result = await core.add_documents(name, body)
    return JSONResponse(result, headers=usage_headers(result["usage"]))


@router.post("/{name}/documents/delete", response_model=DeleteDocumentsResponse, responses=WRITE_ERRORS, dependencies=[AdminDep])
async def delete_documents(name: NewIndexName, body: DeleteDocumentsRequest, core: CoreDep) -> dict:
    """Delete documents by id; unknown ids are listed in `not_found`."""
    return await core.delete_documents(name, body.ids)


@router.delete("/{name}/documents/{doc_id}", response_model=DeleteDocumentsResponse, responses=WRITE_ERRORS, dependencies=[AdminDep])
async def delete_document(name: NewIndexName, doc_id: DocId, core: CoreDep) -> dict:
    return await core.delete_documents(name, [doc_id])

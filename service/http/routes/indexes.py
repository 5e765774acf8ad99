"""Index management: create, list, stats, drop; add and delete documents."""

from __future__ import annotations

from fastapi import APIRouter, Response
from starlette.convertors import StringConvertor, register_url_convertor

from thoughtvec.service.http.routes.deps import (
    ERRORS,
    WRITE_ERRORS,
    DocId,
    IndexAdminDep,
    IndexName,
    IngestDep,
    NewIndexName,
    json_body,
)
from thoughtvec.service.http.schemas import (
    AddDocumentsRequest,
    AddDocumentsResponse,
    CreateIndexRequest,
    DeleteDocumentsRequest,
    DeleteDocumentsResponse,
    IndexList,
    IndexStats,
)

router = APIRouter(prefix="/v1/indexes", tags=["indexes"])


class DocIdConvertor(StringConvertor):
    """A document id in a path: any path segment but ``delete``, so that ``DELETE …/documents/delete`` is a 405
    naming ``POST`` (that path is the batch delete's), as the schema says, not the deletion of a document."""

    regex = "(?!delete$)[^/]+"


register_url_convertor("doc_id", DocIdConvertor())


@router.get("", response_model=IndexList, responses=ERRORS)
async def list_indexes(indexes: IndexAdminDep) -> IndexList:
    """Every index with its stats, and any being built."""
    return IndexList.of(indexes.list_indexes())


@router.post("", status_code=201, response_model=IndexStats, responses=WRITE_ERRORS)
async def create_index(body: CreateIndexRequest, indexes: IndexAdminDep) -> IndexStats:
    """A new empty index for one model and view, with a FAISS factory string, a metric and its default search `mode`."""
    return IndexStats.of(
        await indexes.create_index(
            name=body.name,
            model=body.model,
            view=body.view,
            mode=body.mode,
            factory=body.factory,
            metric=body.metric,
            normalize=body.normalize,
            train_size=body.train_size,
        )
    )


@router.get("/{name}", response_model=IndexStats, responses=ERRORS)
async def index_stats(name: IndexName, indexes: IndexAdminDep) -> IndexStats:
    return IndexStats.of(indexes.index_stats(name))


@router.delete("/{name}", status_code=204, responses=WRITE_ERRORS)
async def drop_index(name: NewIndexName, indexes: IndexAdminDep) -> Response:
    """Delete the index and its files."""
    await indexes.drop_index(name)
    return Response(status_code=204)


@router.post("/{name}/documents", response_model=AddDocumentsResponse, responses=WRITE_ERRORS)
async def add_documents(name: NewIndexName, body: AddDocumentsRequest, ingest: IngestDep) -> Response:
    """Embed and add documents (`text`, optional `id` and `metadata`); durable once answered.

    Ids must be new (409 otherwise); missing ids are generated. Long texts are split and pooled like any input.
    """
    answer = AddDocumentsResponse.of(await ingest.add_documents(name, body.documents, body.truncation))
    return json_body(answer, answer.usage)


@router.post("/{name}/documents/delete", response_model=DeleteDocumentsResponse, responses=WRITE_ERRORS)
async def delete_documents(name: NewIndexName, body: DeleteDocumentsRequest, ingest: IngestDep) -> DeleteDocumentsResponse:
    """Delete documents by id; unknown ids are listed in `not_found`."""
    return DeleteDocumentsResponse.of(await ingest.delete_documents(name, body.ids))


@router.delete("/{name}/documents/{doc_id:doc_id}", response_model=DeleteDocumentsResponse, responses=WRITE_ERRORS)
async def delete_document(name: NewIndexName, doc_id: DocId, ingest: IngestDep) -> DeleteDocumentsResponse:
    """Delete one document. Its path is any id but `delete` (`…/documents/delete` is the route above: a document
    with that id is deleted there, by `{"ids": ["delete"]}`)."""
    return DeleteDocumentsResponse.of(await ingest.delete_documents(name, [doc_id]))

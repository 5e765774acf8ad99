"""``GET /info`` and ``POST /tokenize`` — what is served, and how a model sees a text (TEI and infinity have both;
``/tokenize`` also takes TEI's body)."""

from __future__ import annotations

from fastapi import APIRouter

from thoughtvec.service.http.peer_schemas import TeiTokenizeRequest, TeiTokenizeResponse, TokenizeForms
from thoughtvec.service.http.routes.deps import TEI_ERRORS, CatalogDep, SparseDep
from thoughtvec.service.http.schemas import InfoResponse, TokenizeResponse

router = APIRouter(tags=["info"])


@router.get("/info", response_model=InfoResponse, responses=TEI_ERRORS)
async def info(catalog: CatalogDep, sparse: SparseDep) -> InfoResponse:
    """Models (dimensions, views, token limits), aliases, request limits, version and devices; how `/embed_sparse`
    makes its vectors."""
    return InfoResponse.of(catalog.info(), sparse.describe())


@router.post("/tokenize", response_model=TokenizeResponse | TeiTokenizeResponse, responses=TEI_ERRORS)
async def tokenize(body: TokenizeForms, catalog: CatalogDep) -> TokenizeResponse | TeiTokenizeResponse:
    """Each text's tokens with their ids; `oov` lists the words the model does not know (they become `<unk>`).

    `over_limit`: the text has more tokens than the model takes at once (it would be split, truncated or rejected).
    A body with `inputs` is TEI's: a list of `{id, text, special, start, stop}` per input.
    """
    if isinstance(body, TeiTokenizeRequest):
        return TeiTokenizeResponse.of(await catalog.tokenize(body.inputs, body.model, "inputs", False, body.add_special_tokens))
    return TokenizeResponse.of(await catalog.tokenize(body.input, body.model))

"""``GET /v1/models`` — OpenAI-style list with each bundle's family, variant, views and limits, then the aliases;
``GET /v1/models/{name}`` — one of them with its training record (provenance)."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter

from thoughtvec.service.core.results import ModelDescription
from thoughtvec.service.http.routes.deps import ERRORS, CatalogDep, ModelName

router = APIRouter(tags=["models"])
ALIAS_FIELDS = ("id", "object", "created", "owned_by", "dimension", "default", "alias_of")  # an alias in the list


def _model(d: ModelDescription, fields: tuple[str, ...] | None = None) -> dict:
    """OpenAI's model object: its constant fields, then the description (absent optional fields left out)."""
    body = {"id": d.id, "object": "model", "created": 0, "owned_by": "thoughtvec"} | {
        k: v for k, v in dataclasses.asdict(d).items() if v is not None or k == "dev"
    }
    return {k: v for k, v in body.items() if k in fields} if fields else body


@router.get("/v1/models", responses=ERRORS)
async def list_models(catalog: CatalogDep) -> dict:
    listing = catalog.models()
    # `devices`: where encoders and searches run (each model's own `providers` are those its session uses).
    # an alias: the name and what it stands for; the model's whole entry is at /v1/models/{alias}
    return {
        "object": "list",
        "data": [_model(m) for m in listing.models] + [_model(a, ALIAS_FIELDS) for a in listing.aliases],
        "devices": listing.devices,
    }


@router.get("/v1/models/{name}", responses=ERRORS)
async def get_model(name: ModelName, catalog: CatalogDep) -> dict:
    return _model(catalog.describe(name))

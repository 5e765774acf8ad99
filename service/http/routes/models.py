"""``GET /v1/models`` — OpenAI-style list with each bundle's family, variant, views and limits, then the aliases;
``GET /v1/models/{name}`` — one of them with its training record (provenance)."""

from __future__ import annotations

from fastapi import APIRouter

from thoughtvec.service.http.routes.deps import ERRORS, EmbeddingDep, ModelName

router = APIRouter(tags=["models"])
ALIAS_FIELDS = ("id", "object", "created", "owned_by", "dimension", "default")


@router.get("/v1/models", responses=ERRORS)
async def list_models(embedding: EmbeddingDep) -> dict:
    reg = embedding.registry
    default = reg.default_model
    # `devices`: where encoders and searches run (each model's own `providers` are those its session uses).
    # an alias: the name and what it stands for; the model's whole entry is at /v1/models/{alias}
    aliases = [
        {k: v for k, v in reg.models[t].describe(False, provenance=False).items() if k in ALIAS_FIELDS} | {"id": a, "alias_of": t}
        for a, t in sorted(reg.aliases().items())
    ]
    return {
        "object": "list",
        "data": [m.describe(m.name == default, provenance=False) for _, m in sorted(reg.models.items())] + aliases,
        "devices": embedding.devices(),
    }


@router.get("/v1/models/{name}", responses=ERRORS)
async def get_model(name: ModelName, embedding: EmbeddingDep) -> dict:
    model = embedding.model(name)
    described = model.describe(model.name == embedding.registry.default_model)
    return described if model.name == name else described | {"id": name, "alias_of": model.name}

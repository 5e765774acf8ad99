"""``GET /v1/models`` — OpenAI-style list with each bundle's family, variant, views and limits, then the aliases."""

from __future__ import annotations

from fastapi import APIRouter

from thoughtvec.service.http.routes.deps import ERRORS, EmbeddingDep, ModelName

router = APIRouter(tags=["models"])


@router.get("/v1/models", responses=ERRORS)
async def list_models(embedding: EmbeddingDep) -> dict:
    reg = embedding.registry
    default = reg.default_model
    # `devices`: where encoders and searches run (each model's own `providers` are those its session uses).
    aliases = [reg.models[t].describe(False) | {"id": a, "alias_of": t} for a, t in sorted(reg.aliases().items())]
    return {
        "object": "list",
        "data": [m.describe(m.name == default) for _, m in sorted(reg.models.items())] + aliases,
        "devices": embedding.devices(),
    }


@router.get("/v1/models/{name}", responses=ERRORS)
async def get_model(name: ModelName, embedding: EmbeddingDep) -> dict:
    model = embedding.model(name)
    described = model.describe(model.name == embedding.registry.default_model)
    return described if model.name == name else described | {"id": name, "alias_of": model.name}

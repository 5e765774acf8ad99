"""``GET /v1/models`` — OpenAI-style list with each bundle's family, variant, views and limits."""

from __future__ import annotations

from fastapi import APIRouter

from service.routes.deps import ERRORS, CoreDep

router = APIRouter(tags=["models"])


@router.get("/v1/models", responses=ERRORS)
async def list_models(core: CoreDep) -> dict:
    reg = core.registry
    default = reg.default_model
    # `devices`: where encoders and searches run (each model's own `providers` are those its session uses).
    return {"object": "list", "data": [m.describe(m.name == default) for _, m in sorted(reg.models.items())],
            "devices": core.devices()}


@router.get("/v1/models/{name}", responses=ERRORS)
async def get_model(name: str, core: CoreDep) -> dict:
    model = core.registry.get(name)
    return model.describe(model.name == core.registry.default_model)

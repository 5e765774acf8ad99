"""One router per resource; each route validates, calls :class:`thoughtvec.service.core.engine.Core`, serialises."""

from thoughtvec.service.http.routes import docs, embeddings, indexes, info, models, ops, playground, rerank, search, similarity

ROUTERS = [
    ops.router,
    playground.router,
    docs.router,
    info.router,
    models.router,
    embeddings.router,
    similarity.router,
    rerank.router,
    search.router,
    indexes.router,
]

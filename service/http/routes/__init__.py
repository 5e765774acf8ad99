"""One router per resource; each route validates, calls the service it needs
(``thoughtvec.service.core``: the embedding service or the index service), serialises."""

from thoughtvec.service.http.routes import docs, embeddings, generate, indexes, info, models, ops, playground, rerank, search, similarity

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
    generate.router,
]

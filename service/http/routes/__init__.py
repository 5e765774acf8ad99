"""One router per resource; each route validates, calls the service it needs
(``thoughtvec.service.core``: the embedding service or the index service), serialises.

:data:`ACCESS` beside them says who may call each route with each method (``thoughtvec.service.http.rules``
enforces it before anything answers). A route the table does not name keeps the app from starting.
"""

from thoughtvec.service.http.routes import (
    cohere,
    docs,
    embeddings,
    generate,
    indexes,
    info,
    models,
    ops,
    playground,
    rerank,
    search,
    similarity,
)
from thoughtvec.service.http.rules import Access, AccessTable

# The router tries routes in this order: the embeddings routes, the most requested, first.
ROUTERS = [
    embeddings.router,
    ops.router,
    playground.router,
    docs.router,
    info.router,
    models.router,
    similarity.router,
    rerank.router,
    cohere.router,
    search.router,
    indexes.router,
    generate.router,
]

OPEN, KEY, ADMIN = Access.open, Access.key, Access.admin

# Who may call each route: (method, path as declared) -> open / an API key / an admin key.
# fmt: off
ACCESS: AccessTable = {
    ("GET", "/health"): OPEN,  # liveness: probes carry no key
    ("GET", "/"): OPEN,  # the playground page holds no data; its calls send the key
    ("GET", "/favicon.ico"): OPEN,  # browsers ask for it by themselves, with no key
    ("GET", "/ready"): KEY,
    ("GET", "/metrics"): KEY,
    ("GET", "/openapi.json"): KEY,
    ("HEAD", "/openapi.json"): KEY,
    ("GET", "/docs"): KEY,
    ("GET", "/redoc"): KEY,
    ("GET", "/docs-assets/{name}"): KEY,
    ("GET", "/info"): KEY,
    ("GET", "/v1/models"): KEY,
    ("GET", "/v1/models/{name}"): KEY,
    ("POST", "/"): KEY,  # TEI's embeddings at the base URL (huggingface_hub's InferenceClient)
    ("POST", "/v1/embeddings"): KEY,
    ("POST", "/embed"): KEY,
    ("POST", "/embed_sparse"): KEY,  # TEI's sparse vectors: BM25's document and query halves
    ("POST", "/tokenize"): KEY,
    ("POST", "/v1/similarity"): KEY,
    ("POST", "/similarity"): KEY,  # TEI's
    ("POST", "/v1/rerank"): KEY,
    ("POST", "/rerank"): KEY,
    ("POST", "/v2/rerank"): KEY,
    ("POST", "/v1/embed"): KEY,  # Cohere's embed, v1 and v2
    ("POST", "/v2/embed"): KEY,
    ("POST", "/v1/search"): KEY,
    ("POST", "/v1/generate"): KEY,
    ("GET", "/v1/generate/models"): KEY,
    ("GET", "/v1/indexes"): KEY,
    ("GET", "/v1/indexes/{name}"): KEY,
    ("POST", "/v1/indexes/{name}/map"): KEY,
    ("POST", "/v1/indexes"): ADMIN,
    ("DELETE", "/v1/indexes/{name}"): ADMIN,
    ("POST", "/v1/indexes/{name}/documents"): ADMIN,
    ("POST", "/v1/indexes/{name}/documents/delete"): ADMIN,
    ("DELETE", "/v1/indexes/{name}/documents/{doc_id}"): ADMIN,
}
# fmt: on

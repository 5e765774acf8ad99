"""One router per resource; each route validates, calls :class:`service.core.Core`, serialises."""

from service.routes import embeddings, indexes, models, ops, search, similarity

ROUTERS = [ops.router, models.router, embeddings.router, similarity.router, search.router, indexes.router]

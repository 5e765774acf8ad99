"""The index services, without HTTP, over one store: each does one thing, and all share one
:class:`~thoughtvec.service.core.index_state.IndexState` (the store, the indexes being built, the checks every
request makes of an index).

* :class:`~thoughtvec.service.core.index_admin.IndexAdmin`: the store opened, loaded and closed, readiness, an index
  made, dropped, listed and described, and the default index built on first start;
* :class:`~thoughtvec.service.core.index_search.SearchService`: search (dense, lexical, hybrid) and the map;
* :class:`~thoughtvec.service.core.index_ingest.IngestService`: documents added (embedded in bulk) and deleted.
"""

from __future__ import annotations

from typing import NamedTuple

from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.index_admin import IndexAdmin
from thoughtvec.service.core.index_ingest import IngestService
from thoughtvec.service.core.index_search import SearchService
from thoughtvec.service.core.index_state import IndexState
from thoughtvec.service.settings import Settings


class IndexServices(NamedTuple):
    admin: IndexAdmin
    search: SearchService
    ingest: IngestService

    @classmethod
    def over(cls, settings: Settings, embedding: EmbeddingService) -> IndexServices:
        """The three services over the store the settings name (opened, not yet taken: :meth:`IndexAdmin.open`)."""
        state = IndexState(settings, embedding)
        return cls(IndexAdmin(state), SearchService(state), IngestService(state))

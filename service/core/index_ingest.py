"""Documents into and out of an index, without HTTP: added (embedded in bulk through the embedding service, so
the same limits and long-input rules apply as to an embeddings request, while requests arriving meanwhile keep
their place in the queue) and deleted by id.

Everything a write could refuse is checked before anything is stored: the index answers and may be written, the
count, each text and each metadata, the model (the export of the index's vectors). A write is durable once
answered (the store's log, or Milvus).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from thoughtvec.service.core.index_state import IndexState
from thoughtvec.service.core.limits import check_count
from thoughtvec.service.core.results import DocumentsAdded, DocumentsDeleted, Usage
from thoughtvec.service.index.contents import Doc, new_id
from thoughtvec.service.index.jsonvalues import check_metadata
from thoughtvec.service.settings import Truncation


class NewDocument(Protocol):
    """A document to add: what ``POST /v1/indexes/{name}/documents`` carries for each."""

    text: Any
    id: str | None
    metadata: dict[str, Any] | None


class IngestService:
    """Every index's documents, written through the embedding service's models."""

    def __init__(self, state: IndexState):
        self.state = state
        self.settings = state.settings
        self.embedding = state.embedding

    async def add_documents(self, name: str, docs: Sequence[NewDocument], truncation: Truncation | None = None) -> DocumentsAdded:
        """Embed ``docs`` and add them; ids missing are generated. Durable once returned."""
        s = self.settings
        config = self.state.config(name)
        self.state.writable()
        check_count(len(docs), s.max_inputs, "documents")
        fields = [f"documents[{i}].text" for i in range(len(docs))]
        texts = self.embedding.texts([d.text for d in docs], fields, truncation)
        for i, d in enumerate(docs):  # checked before anything is stored: a search must always be able to return it
            check_metadata(d.metadata, f"documents[{i}].metadata", s.max_metadata_bytes, s.max_metadata_depth)
        if not config.embedded:  # lexical-only: BM25 needs the words alone, so no model runs (zero rows fill the vectors' place)
            vectors, usage = np.zeros((len(texts), config.dim), np.float32), Usage()
        else:
            model = self.state.index_model(name, config)
            enc = await self.embedding.encode(model, config.view, texts, normalize=False, mode=truncation, bulk=True)
            vectors, usage = enc.vectors, enc.usage
        items = [Doc(d.id or new_id(), t, d.metadata) for d, t in zip(docs, texts.texts)]
        ids = await self.state.run(self.state.store.add, name, items, vectors)
        return DocumentsAdded(name, ids, await self.state.run(self.state.store.count, name), usage)

    async def delete_documents(self, name: str, ids: list[str]) -> DocumentsDeleted:
        """Delete by id; the ids not in the index are listed, not refused."""
        self.state.config(name)
        self.state.writable()
        check_count(len(ids), self.settings.max_inputs, "ids")
        found = await self.state.run(self.state.store.delete, name, ids)
        gone = set(found)
        count = await self.state.run(self.state.store.count, name)
        return DocumentsDeleted(name, found, [i for i in ids if i not in gone], count)

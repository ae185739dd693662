"""Vectors made from an older form of the embedding text, replaced in the background.

Since ``EMBEDDING_TEXT_VERSION`` 2 the embedder reads Chinese in simplified script (``embedding_text``),
and so do questions. A library embedded before holds, for every chunk with traditional characters, a
vector of the text as written, which a question (now embedded in simplified script) meets less well
than the converted text: on the table development sets, traditional questions were hits at 3 for 41
of 57 with such vectors and 45 with converted ones (docs/documents.md, ``script17``).

The library records the form its vectors were made from (``EMBEDDING_TEXT_FACT`` in the registry; a
library without the record was embedded before it existed, so by version 1). When the background
embedder starts on an older library, ``replace_older_vectors`` deletes the vectors of exactly the chunks
whose embedding text changed and puts their documents back to ``embedding``: they stay searchable by
keywords and by their other vectors, the retrieval trace says they are keyword-only for now, and the
background embedder adds the missing vectors as it does for any document. English and simplified
chunks keep their vectors: what the embedder reads of them has not changed.
"""

from __future__ import annotations

import logging

from rag.index.searchable import EMBEDDING, missing_chunks
from rag.index.store import DocumentStore
from rag.ingest.embedding import script_changes_embedding
from rag.models.embedding_router import EMBEDDING_TEXT_FACT, EMBEDDING_TEXT_VERSION

logger = logging.getLogger(__name__)


def stored_text_version(store: DocumentStore) -> int:
    """The form of text the library's vectors were made from (1 when the library never recorded it)."""
    stored = store.registry.fact(EMBEDDING_TEXT_FACT)
    return int(stored) if stored else 1


def replace_older_vectors(store: DocumentStore) -> list[str]:
    """Delete the vectors made from an older form of a chunk's embedding text and reopen their documents.

    Returns the documents put back to ``embedding`` (for the background embedder to queue). The library
    is recorded as current only when every document was checked: one that another process is working
    on is checked again at the next start.
    """
    if stored_text_version(store) >= EMBEDDING_TEXT_VERSION:
        return []
    reopened: list[str] = []
    busy: list[str] = []
    candidates = store.registry.ids_with_status("completed") | store.registry.ids_with_status(EMBEDDING)
    for doc_id in sorted(candidates):
        with store.writing(f"replacing the older vectors of {doc_id}"):
            record = store.registry.get(doc_id)
            if record is None or record.status not in ("completed", EMBEDDING):
                continue  # deleted or being re-indexed meanwhile: its new vectors are of the current form
            if store.registry.live_claim(doc_id) is not None:
                busy.append(doc_id)
                continue
            changed = [chunk.chunk_id for chunk in store.chunks(doc_id) if script_changes_embedding(chunk)]
            if not changed:
                continue
            store.vectors.delete_chunks(changed)
            left = missing_chunks(store, doc_id)
            store.ledger.set(doc_id, left.embedded, left.total)
            store.registry.update(doc_id, status=EMBEDDING)
        logger.info("%s: %d chunk vector(s) were made from traditional Chinese as written; embedding them again "
                    "in simplified script", doc_id, len(changed))
        reopened.append(doc_id)
    if busy:
        logger.info("%d document(s) in use by another process; their vectors are checked at the next start: %s",
                    len(busy), ", ".join(busy))
        return reopened
    with store.writing("recording the form of the library's embedding text"):
        store.registry.set_fact(EMBEDDING_TEXT_FACT, str(EMBEDDING_TEXT_VERSION))
    return reopened

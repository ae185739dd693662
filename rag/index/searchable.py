"""Keyword-searchable first, vectors after: the store's write steps for a document that is embedded
in the background.

    publish_keywords   BM25 entries + page data + registry ``embedding`` + ledger 0/N   (one write step;
                       N counts vectors: a chunk has one per model that embeds its language)
    claim_embedding    this process's ``embed`` claim on the row (unless another live process holds one)
    add_vectors        one batch of vectors + ledger n/N, only while the row is ``embedding`` and ours
    finish_embedding   registry ``completed`` and the claim released, only when Chroma holds a vector for
                       every chunk

Each step holds the library's write lock, so a delete (or a re-index) either happens before a step —
which then sees the row gone, changed or claimed by the re-index and stores nothing — or after it. A
crash between steps leaves an ``embedding`` row whose keywords are complete and whose vectors are a
subset, claimed by a process that is gone (recovery releases such claims); ``missing_chunks`` reads
what Chroma actually holds, so resuming embeds exactly the rest, and ``completed`` is never written
while a vector is missing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

from rag.documents import Chunk, Page
from rag.index.ownership import current
from rag.models.embedding_router import model_id_of

# the store's own methods call these, so they take it untyped (``rag.index.store.DocumentStore``)
DocumentStore = Any

logger = logging.getLogger(__name__)

EMBEDDING = "embedding"
PRELIMINARY = "preliminary"  # keywords from the text layer while tables and scans are read (quick_pass)
EMBED = "embed"  # the claim's operation while a process stores a document's vectors


@dataclass(frozen=True)
class KeywordOnly:
    """A document retrieval finds by keywords while its vectors are still being stored."""

    doc_id: str
    file_name: str
    embedded: int
    total: int
    error: str = ""  # why embedding stopped, when it did

    def describe(self) -> str:
        stopped = f"; embedding stopped: {self.error}" if self.error else ""
        return f"{self.file_name} ({self.embedded}/{self.total} vectors stored{stopped})"


@dataclass
class MissingVectors:
    """Chunks of one document whose vectors are not stored yet, grouped by the model that embeds them.

    ``total`` counts vectors, not chunks: an English chunk has one per English model (two by default).
    """

    by_model: dict[str, tuple[Any, list[Chunk]]]  # model_id -> (embedder, chunks)
    total: int

    @property
    def missing(self) -> int:
        return sum(len(chunks) for _, chunks in self.by_model.values())

    @property
    def embedded(self) -> int:
        return self.total - self.missing


def publish_keywords(store: DocumentStore, doc_id: str, chunks: Sequence[Chunk], page_data: Sequence[Page],
                     *, status: str = EMBEDDING, **fields: Any) -> None:
    """Make a parsed, chunked document keyword-searchable and mark it ``status`` (0 of N vectors).

    Args:
        store: The document store.
        doc_id: The document.
        chunks: All its chunks.
        page_data: Its pages (text and word boxes, for highlights).
        status: ``embedding`` (final chunks: vectors next) or ``preliminary``. Defaults to ``embedding``.
        **fields: Registry fields learned at ingest (pages, language, ...).
    """
    with store.writing(f"indexing keywords of {doc_id}"):
        store.write_keywords({doc_id: list(chunks)})
        store.write_pages(doc_id, list(page_data))
        store.ledger.set(doc_id, 0, vector_count(store, chunks))
        store.registry.update(doc_id, status=status, chunks=len(chunks), error="", **fields)


def missing_chunks(store: DocumentStore, doc_id: str) -> MissingVectors:
    """What Chroma does not hold yet for ``doc_id``'s chunks (all of them for a fresh document)."""
    groups = vector_groups(store, store.chunks(doc_id))
    by_model: dict[str, tuple[Any, list[Chunk]]] = {}
    for model_id, (embedder, group) in groups.items():
        stored = set(store.vectors.get(model_id, [c.chunk_id for c in group])) if model_id in _models(store) else set()
        rest = [c for c in group if c.chunk_id not in stored]
        if rest:
            by_model[model_id] = (embedder, rest)
    return MissingVectors(by_model, sum(len(group) for _, group in groups.values()))


def vector_groups(store: DocumentStore, chunks: Sequence[Chunk]) -> dict[str, tuple[Any, list[Chunk]]]:
    """model_id -> (embedder, chunks): every model that embeds each chunk's language, each chunk once per model."""
    groups: dict[str, tuple[Any, list[Chunk]]] = {}
    for chunk in chunks:
        for spec in store.router.specs_for(chunk.language):
            embedder = store.router.for_spec(spec)
            group = groups.setdefault(model_id_of(embedder), (embedder, []))[1]
            if not group or group[-1] is not chunk:  # two specs may name one model
                group.append(chunk)
    return groups


def vector_count(store: DocumentStore, chunks: Sequence[Chunk]) -> int:
    """How many vectors ``chunks`` need: one per chunk and model that embeds its language."""
    return sum(len(group) for _, group in vector_groups(store, chunks).values())


def reopen_incomplete(store: DocumentStore) -> list[str]:
    """Put completed documents that lack only the second English embedder's vectors back to ``embedding``.

    A library embedded before a second English embedder was configured has documents with none of its
    vectors; back in ``embedding`` they stay searchable (by
    keywords, and by the vectors they have) while the background embedder adds just the missing ones.
    Loads the configured embedders, so it belongs on a background thread.
    """
    second = store.router.second_english()
    if second is None:
        return []
    reopened = []
    for doc_id in sorted(store.registry.ids_with_status("completed")):
        left = missing_chunks(store, doc_id)
        # only the second English vectors: a changed English model means a re-index (the Documents page offers it)
        if not left.missing or set(left.by_model) != {model_id_of(second)}:
            continue
        with store.writing(f"reopening {doc_id} for its missing vectors"):
            record = store.registry.get(doc_id)
            if record is None or record.status != "completed" or store.registry.live_claim(doc_id) is not None:
                continue
            store.ledger.set(doc_id, left.embedded, left.total)
            store.registry.update(doc_id, status=EMBEDDING)
        reopened.append(doc_id)
    if reopened:
        logger.info("%d completed document(s) lack vectors of a configured model; embedding them: %s",
                    len(reopened), ", ".join(reopened))
    return reopened


def claim_embedding(store: DocumentStore, doc_id: str) -> str:
    """Take ``doc_id``'s vectors on for this process: ``"ok"``, ``"gone"`` (not ``embedding`` any more) or
    ``"busy"`` (another running process embeds it, or an ingest, re-index or delete is at work on it)."""
    with store.writing(f"claiming {doc_id} for embedding"):
        record = store.registry.get(doc_id)
        if record is None or record.status != EMBEDDING:
            return "gone"
        claim = store.registry.live_claim(doc_id)
        if claim is not None and not _ours(claim):
            return "busy"
        store.registry.claim(doc_id, current(), EMBED)
        return "ok"


def add_vectors(store: DocumentStore, doc_id: str, model_id: str, chunks: Sequence[Chunk], vectors: Any,
                *, embedded: int, total: int) -> bool:
    """Store one batch of ``doc_id``'s vectors and count ``embedded`` of ``total`` vectors done; False
    (nothing stored) when the document was deleted, re-indexed or finished meanwhile."""
    with store.writing(f"embedding {doc_id}"):
        record = store.registry.get(doc_id)
        if (record is None or record.status != EMBEDDING or not _ours(store.registry.claim_of(doc_id))
                or not _same_chunks(store, doc_id, chunks)):
            return False
        store.write_vectors({model_id: (list(chunks), vectors)})
        store.ledger.set(doc_id, embedded, total)
        return True


def finish_embedding(store: DocumentStore, doc_id: str) -> bool:
    """Mark ``doc_id`` ``completed`` if Chroma holds every chunk's vector; False (unchanged) otherwise."""
    with store.writing(f"completing {doc_id}"):
        record = store.registry.get(doc_id)
        if record is None or record.status != EMBEDDING or not _ours(store.registry.claim_of(doc_id)):
            return False
        left = missing_chunks(store, doc_id)
        if left.missing:
            logger.warning("%s: %d of %d vectors still missing; not marking it completed", doc_id, left.missing,
                           left.total)
            store.ledger.set(doc_id, left.embedded, left.total)
            return False
        store.registry.update(doc_id, status="completed", error="")
        store.ledger.delete(doc_id)
        store.registry.release(doc_id)
        return True


def stop_embedding(store: DocumentStore, doc_id: str, error: str = "") -> None:
    """Let go of ``doc_id``'s vectors, recording why (``error``) if they stopped on one; it stays
    keyword-searchable and can be resumed by any process."""
    with store.writing(f"stopping the embedding of {doc_id}"):
        record = store.registry.get(doc_id)
        if record is None or record.status != EMBEDDING:
            return
        claim = store.registry.claim_of(doc_id)
        if claim is not None and not (_ours(claim) or not claim.alive()):
            return  # a re-index or delete took over meanwhile
        if error:
            state = store.ledger.get(doc_id)
            total = state.total if state else vector_count(store, store.chunks(doc_id))
            store.ledger.set(doc_id, state.embedded if state else 0, total, error=error)
        store.registry.release(doc_id)


def keyword_only(store: DocumentStore, doc_ids: Sequence[str] | None = None) -> list[KeywordOnly]:
    """Documents (of ``doc_ids``, or all) that retrieval finds by keywords while vectors are missing."""
    waiting = store.registry.ids_with_status(EMBEDDING) | store.registry.ids_with_status(PRELIMINARY)
    if doc_ids is not None:
        waiting &= set(doc_ids)
    if not waiting:
        return []
    states = store.ledger.all()
    found = []
    for doc_id in sorted(waiting):
        record = store.registry.get(doc_id)
        if record is None:
            continue
        state = states.get(doc_id)
        found.append(KeywordOnly(doc_id, record.file_name, state.embedded if state else 0,
                                 state.total if state else vector_count(store, store.chunks(doc_id)),
                                 state.error if state else ""))
    return found


def holds_embedding(store: DocumentStore, doc_id: str) -> bool:
    """Whether ``doc_id`` is ``embedding`` under this process's ``embed`` claim."""
    record = store.registry.get(doc_id)
    return record is not None and record.status == EMBEDDING and _ours(store.registry.claim_of(doc_id))


def _ours(claim: Any) -> bool:
    """The claim is this process's ``embed`` claim."""
    return claim is not None and claim.operation == EMBED and claim.owner == current()


def _same_chunks(store: DocumentStore, doc_id: str, chunks: Sequence[Chunk]) -> bool:
    """The batch's chunks are still the document's (a re-index meanwhile made new ones)."""
    current = store.keywords.get([c.chunk_id for c in chunks])
    return len(current) == len(chunks) and all(
        current[c.chunk_id].doc_id == doc_id and current[c.chunk_id].text == c.text for c in chunks)


def _models(store: DocumentStore) -> set[str]:
    return set(store.vectors.model_ids())

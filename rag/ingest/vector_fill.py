"""Embed a keyword-searchable document in small batches, storing them in Chroma as they are done.

The document is already found by keyword search (``rag.index.searchable.publish_keywords``); this adds
its vectors. Each batch of ``BATCH`` chunks waits for its turn (``rag.models.priority``: a question
being answered goes first) and is embedded through the embedding cache; every ``STORE_EVERY`` chunks
(and at the end) what was embedded is added to Chroma in one write, so vector search finds the chunks
embedded so far. One Chroma write costs about 0.1 s whatever its size (docs/ingest-speed.md), so
storing every 8-chunk batch spent about 7 % of the embedding time on writes; the small batches keep
a question from waiting behind a long one. It starts from what Chroma already holds, so the same call
resumes a document whose embedding was interrupted (a restart, a crash, an error); chunks embedded but
not yet stored are in the embedding cache, so a resume does not compute them again.

Chunks go in document order, so the first pages become vector-searchable first and the rate seen so
far predicts the rest (sorting by length made no measurable difference to e5-small, which pads nothing:
docs/ingest-speed.md).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from rag.index.searchable import (
    add_vectors,
    claim_embedding,
    finish_embedding,
    holds_embedding,
    missing_chunks,
    stop_embedding,
)
from rag.index.store import DocumentStore
from rag.ingest.embedding import embedding_text
from rag.ingest.progress import IngestProgress
from rag.models.priority import PROCESS_PRIORITY, Priority

logger = logging.getLogger(__name__)

BATCH = 8  # chunks per embedding call: background work gives way to a question between two of them
STORE_EVERY = 32  # chunks per Chroma write


@dataclass
class FillResult:
    """How one run over a document ended.

    ``status``: ``completed`` (every vector stored), ``stopped`` (asked to stop; resumable),
    ``gone`` (deleted or re-indexed meanwhile; nothing more to do), ``busy`` (another running process
    is embedding it, or an ingest, re-index or delete is at work on it), ``failed`` (an error; the
    document stays keyword-searchable and the error is recorded for a retry).
    """

    doc_id: str
    status: str
    embedded: int = 0  # vectors stored at the end (a chunk has one per model that embeds its language)
    total: int = 0
    computed: int = 0  # vectors computed by this run (cache misses and hits both count)
    seconds: float = 0.0
    waited_s: float = 0.0  # of which waiting for questions
    error: str = ""


def fill_vectors(store: DocumentStore, doc_id: str, *, batch_size: int = BATCH, store_every: int = STORE_EVERY,
                 priority: Priority = PROCESS_PRIORITY, progress: IngestProgress | None = None,
                 stop: threading.Event | None = None) -> FillResult:
    """Store the missing vectors of ``doc_id`` (status ``embedding``), batch by batch, then mark it completed.

    Args:
        store: The document store.
        doc_id: A document whose keywords are published.
        batch_size: Chunks per embedding call. Defaults to ``BATCH``.
        store_every: Chunks per Chroma write (at least one batch). Defaults to ``STORE_EVERY``.
        priority: Whose turn it is; batches wait while a question is in flight. Defaults to the process's.
        progress: Advanced after every Chroma write (stage ``embedding``). Defaults to none.
        stop: Set to stop after the current batch. Defaults to none.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    started = time.perf_counter()
    result = FillResult(doc_id, "gone")
    try:
        result.status = claim_embedding(store, doc_id)
        if result.status != "ok":
            return result
        result.status = "gone"
        missing = missing_chunks(store, doc_id)
        result.total, result.embedded = missing.total, missing.embedded
        if progress is not None:
            progress.stage("embedding", total=missing.total, done=missing.embedded)
        for model_id, (embedder, chunks) in missing.by_model.items():
            done, vectors = [], []
            for start in range(0, len(chunks), batch_size):
                if stop is not None and stop.is_set():
                    result.status = "stopped"
                    stop_embedding(store, doc_id)  # let go: another process (or the next start) resumes it
                    return result
                result.waited_s += priority.wait_for_turn(stop=stop)
                batch = chunks[start:start + batch_size]
                vectors.extend(store.cache.embed(model_id, [embedding_text(c) for c in batch],
                                                 embedder.get_text_embedding_batch))
                done.extend(batch)
                result.computed += len(batch)
                if len(done) < store_every and start + batch_size < len(chunks):
                    continue
                if not add_vectors(store, doc_id, model_id, done, vectors, embedded=result.embedded + len(done),
                                   total=result.total):
                    return result  # deleted or re-indexed meanwhile: nothing more is stored
                result.embedded += len(done)
                done, vectors = [], []
                if progress is not None:
                    progress.advance(result.embedded)
        if finish_embedding(store, doc_id):
            result.status = "completed"
        elif holds_embedding(store, doc_id):  # ours, yet Chroma lacks a vector: say so, never "completed"
            result.status, result.error = "failed", "vectors are still missing after embedding every chunk"
            stop_embedding(store, doc_id, result.error)
        return result
    except Exception as exc:  # noqa: BLE001 - the document stays keyword-searchable; the error is kept
        logger.exception("embedding %s failed", doc_id)
        result.status, result.error = "failed", f"{type(exc).__name__}: {exc}"
        try:
            stop_embedding(store, doc_id, result.error)
        except Exception:  # noqa: BLE001 - the store itself failing: the log above says why
            logger.exception("could not record why embedding %s stopped", doc_id)
        return result
    finally:
        result.seconds = time.perf_counter() - started

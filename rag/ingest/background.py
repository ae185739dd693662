"""The background embedder: one thread that stores the vectors of keyword-searchable documents.

An ingest hands a document over as soon as its keyword index is written (``submit``); this thread
embeds it in small batches (``rag.ingest.vector_fill``), giving way to questions, while the ingest
thread goes on to parse the next file. Documents are embedded one at a time, in the order they came.

When it starts it also picks up every document left ``embedding`` in the library (the app stopped or
crashed mid-way, or an embedding failed), so a restart resumes them; ``submit`` resumes one on demand
(the Documents page's button). Completed documents go back to it when they lack a configured model's
vectors (``reopen_incomplete``) or hold vectors of an older form of their text (``replace_older_vectors``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Callable

from rag.index.searchable import EMBEDDING, reopen_incomplete
from rag.index.store import DocumentStore
from rag.ingest.embedding_upgrade import replace_older_vectors
from rag.ingest.progress import IngestProgress
from rag.ingest.vector_fill import BATCH, FillResult, fill_vectors
from rag.models.priority import PROCESS_PRIORITY, Priority

logger = logging.getLogger(__name__)

Listener = Callable[[FillResult], None]


class BackgroundEmbedder:
    """Embeds submitted documents on a daemon thread, one at a time.

    Args:
        store: The document store.
        batch_size: Chunks per batch. Defaults to ``vector_fill.BATCH``.
        priority: Batches wait while a question is in flight. Defaults to the process's.
        resume: At start, queue every document left ``embedding`` in the library, then (on the worker
            thread) every completed one that lacks a vector of a configured model or holds one made from an
            older form of its text. Defaults to True.
    """

    def __init__(self, store: DocumentStore, *, batch_size: int = BATCH, priority: Priority = PROCESS_PRIORITY,
                 resume: bool = True) -> None:
        self._store = store
        self.batch_size = batch_size
        self.priority = priority
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._current: str | None = None
        self._again: set[str] = set()  # submitted while being embedded (a re-index): run once more after
        self._progress: dict[str, IngestProgress] = {}
        self._results: dict[str, FillResult] = {}
        self._listeners: list[Listener] = []
        self._stop = threading.Event()
        self._resume = resume
        self._checking = resume  # the worker's first look for completed documents that lack vectors
        if resume:
            self._queue_unfinished()
        self._thread = threading.Thread(target=self._run, name="citewise-embed", daemon=True)
        self._thread.start()

    # -- requests -----------------------------------------------------------------------------

    def submit(self, doc_id: str, progress: IngestProgress | None = None) -> IngestProgress:
        """Queue ``doc_id`` (status ``embedding``) unless it is queued or running; returns its progress."""
        with self._cond:
            if progress is not None or doc_id not in self._progress:
                self._progress[doc_id] = progress or self._new_progress(doc_id)
            if doc_id == self._current:
                self._again.add(doc_id)  # its chunks may have changed under the run in progress
            elif doc_id not in self._queue:
                self._queue.append(doc_id)
                self._results.pop(doc_id, None)
                self._cond.notify_all()
            return self._progress[doc_id]

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(result)`` on the worker thread after each document's run."""
        with self._cond:
            self._listeners.append(listener)

    # -- state --------------------------------------------------------------------------------

    def progress(self, doc_id: str) -> IngestProgress | None:
        with self._cond:
            return self._progress.get(doc_id)

    def result(self, doc_id: str) -> FillResult | None:
        """How the latest finished run over ``doc_id`` ended, if one has."""
        with self._cond:
            return self._results.get(doc_id)

    def pending(self) -> list[str]:
        """Documents being embedded or waiting, in order."""
        with self._cond:
            return ([self._current] if self._current else []) + list(self._queue)

    def active(self, doc_id: str | None = None) -> bool:
        pending = self.pending()
        return bool(pending) if doc_id is None else doc_id in pending

    def wait(self, doc_id: str | None = None, *, timeout: float = 600.0) -> None:
        """Block until ``doc_id`` (or every document) is no longer queued or being embedded.

        Raises:
            TimeoutError: Still embedding after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while (doc_id is None and (self._queue or self._current or self._checking)) or (
                    doc_id is not None and (doc_id == self._current or doc_id in self._queue)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"still embedding {doc_id or 'documents'} after {timeout:.0f} s")
                self._cond.wait(timeout=min(left, 0.5))

    def close(self, timeout: float = 10.0) -> None:
        """Stop after the current batch (what is left resumes at the next start)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self._thread.join(timeout)

    # -- the worker ---------------------------------------------------------------------------

    def _run(self) -> None:
        if self._resume:
            self._reopen_incomplete()
        while not self._stop.is_set():
            with self._cond:
                while not self._queue and not self._stop.is_set():
                    self._cond.wait(timeout=1.0)
                if self._stop.is_set():
                    return
                doc_id = self._current = self._queue.popleft()
                progress = self._progress.get(doc_id) or self._new_progress(doc_id)
            result = fill_vectors(self._store, doc_id, batch_size=self.batch_size, priority=self.priority,
                                  progress=progress, stop=self._stop)
            if result.status in ("completed", "failed"):
                progress.finish(error=result.error)
            logger.info("embedding %s: %s, %d/%d chunks in %.1f s (%.1f s waiting for questions)", doc_id,
                        result.status, result.embedded, result.total, result.seconds, result.waited_s)
            with self._cond:
                self._current = None
                if doc_id in self._again and result.status != "completed":
                    self._again.discard(doc_id)
                    self._queue.appendleft(doc_id)  # re-indexed meanwhile: embed the new chunks now
                    continue
                self._again.discard(doc_id)
                self._results[doc_id] = result
                listeners = list(self._listeners)
                self._cond.notify_all()
            for listener in listeners:
                try:
                    listener(result)
                except Exception:  # noqa: BLE001 - a listener must not stop the worker
                    logger.exception("embedding listener failed for %s", doc_id)

    def _queue_unfinished(self) -> None:
        try:
            waiting = sorted(self._store.registry.ids_with_status(EMBEDDING))
        except Exception:  # noqa: BLE001 - a closed or broken store: nothing to resume
            logger.exception("could not list documents left embedding")
            return
        for doc_id in waiting:
            self.submit(doc_id)
        if waiting:
            logger.info("resuming the embedding of %d document(s): %s", len(waiting), ", ".join(waiting))

    def _reopen_incomplete(self) -> None:
        reopened: list[str] = []
        try:
            reopened = replace_older_vectors(self._store)
            reopened += [doc_id for doc_id in reopen_incomplete(self._store) if doc_id not in reopened]
        except Exception:  # noqa: BLE001 - a closed or broken store: nothing to add
            logger.exception("could not check completed documents for missing or older vectors")
        for doc_id in reopened:
            self.submit(doc_id)
        with self._cond:
            self._checking = False
            self._cond.notify_all()

    def _new_progress(self, doc_id: str) -> IngestProgress:
        record = self._store.registry.get(doc_id)
        progress = IngestProgress(record.file_name if record else doc_id)
        progress.doc_id = doc_id
        return progress

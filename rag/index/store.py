"""The document store: registry, stored files, page data, vectors (Chroma) and keywords (BM25) as one.

One writer per library folder. Any number of stores, in any number of processes, may open the same
folder; they all read, and they take turns to write:

- **The write lock** (``<data>/write.lock``, ``FolderLock``) is held per write *step*, not per
  process: claiming a new document, committing its vectors, keywords and pages, deleting, and
  recovering. Parsing and embedding, which take minutes, run without it, so the app's ingest queue
  and a CLI ``ingest`` or ``delete`` interleave instead of one locking the other out.
- **A writer that finds the lock taken** waits up to ``lock_timeout_s`` (60 s, or
  ``CITEWISE_LOCK_TIMEOUT_S``; ``on_wait`` hears about it once), then fails with ``LibraryBusyError``
  naming the holder's pid, command and operation.
  Reads never wait for writers (except a short, bounded wait to refresh Chroma; see below).
- **Ownership** of a document being worked on is a *claim* in the registry: the owner's pid and start
  time (``ownership``, so a reused pid is not mistaken for it) and the operation. A row stays
  ``pending``/``processing`` while its owner embeds, with no lock held; recovery, which runs when a
  store opens and whenever a writer takes the lock, touches only rows whose owner is gone. A
  ``deleting`` row is always finished (the lock proves its deleter is not at work).
- **Each write is ordered so that a crash at any step recovers**: ingest writes registry row and claim
  (one transaction) → stored file → vectors → keywords → pages → ``completed``; a re-index keeps the
  document ``completed`` and its old index while it computes, then marks it ``processing``, swaps the
  index and marks it ``completed`` again; delete marks the row ``deleting`` → vectors → keywords →
  files → row. Recovery purges a dead ingest's entries and marks it failed (the stored file stays, so
  re-ingesting works), finishes an interrupted delete, and rebuilds BM25 matrices saved from other
  token rows; when a store opens it also removes folders with no registry row.
- **Readers see searchable documents only**: retrieval skips every row neither ``completed`` nor
  ``embedding`` (keywords and pages complete, vectors partly stored: ``rag.index.searchable``).
- **Other processes' writes become visible without reopening**: the registry is SQLite (always
  current); the BM25 index reloads when its ``CURRENT`` file changes (``keywords``); Chroma is
  reopened when ``chroma.changed`` changes (``chroma_connection``). Each costs one ``stat`` per query.

Write paths stay separate (``write_vectors``, ``write_keywords``, ``write_pages``, registry status) so
that an ingest can make a document keyword-searchable first and add its vectors later.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import chromadb

from rag.config import RagConfig
from rag.documents import Chunk, DocumentRecord, Page, Word
from rag.index import recovery
from rag.index.chroma_connection import release_connection, shared_connection
from rag.index.durable import write_atomic
from rag.index.embed_cache import EmbeddingCache
from rag.index.embedding_ledger import EmbeddingLedger
from rag.index.failpoints import reached
from rag.index.folder_lock import LibraryBusyError, folder_lock
from rag.index.jobs import JobJournal
from rag.index.keywords import KeywordIndex
from rag.index.ownership import current
from rag.index.recovery import INTERRUPTED, INTERRUPTED_REINDEX  # noqa: F401 - re-exported
from rag.index.registry import SEARCHABLE, Claim, Registry
from rag.index.searchable import KeywordOnly, keyword_only
from rag.index.vectors import VectorStore
from rag.models.embedding_router import EMBEDDING_TEXT_FACT, EMBEDDING_TEXT_VERSION, EmbedderRouter

logger = logging.getLogger(__name__)

LOCK_TIMEOUT_S = float(os.environ.get("CITEWISE_LOCK_TIMEOUT_S", "60"))  # how long a write waits for another

__all__ = ["DocumentStore", "DocumentBusyError", "LibraryBusyError", "INTERRUPTED", "LOCK_TIMEOUT_S"]


class DocumentBusyError(RuntimeError):
    """A running process is ingesting, re-indexing or deleting this document."""


class DocumentStore:
    """Every document of one library folder (see the module docstring for the write protocol).

    Args:
        config: Storage and embedding settings.
        router: The embedders, by language.
        client: A Chroma client to use instead of opening one (tests, servers). Defaults to none.
        lock_timeout_s: How long a write waits for another writer. Defaults to 60 s.
        on_wait: Called once with a message when a write starts waiting. Defaults to logging it.
    """

    def __init__(self, config: RagConfig, router: EmbedderRouter, *, client: chromadb.ClientAPI | None = None,
                 lock_timeout_s: float = LOCK_TIMEOUT_S, on_wait: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.router = router
        self.root = config.data_path
        recovery.make_private_dir(self.root)
        self.files_dir = self.root / "files"
        self.lock = folder_lock(self.root)
        self.lock_timeout_s = lock_timeout_s
        self.on_wait = on_wait or (lambda message: logger.info("%s", message))
        self.registry = Registry(self.root / "registry.sqlite3", new={EMBEDDING_TEXT_FACT: str(EMBEDDING_TEXT_VERSION)})
        self.jobs = JobJournal(self.root / "registry.sqlite3")
        self.cache = EmbeddingCache(self.root / "embed_cache.sqlite3")
        self.ledger = EmbeddingLedger(self.root / "registry.sqlite3")  # vectors of keyword-searchable documents
        self._connection = shared_connection(config.storage, self.lock, client=client)
        self.vectors = VectorStore(self._connection, config.storage.collection, hidden=self.registry.hidden_ids)
        self.keywords = KeywordIndex(self.root / "bm25" / config.storage.collection,
                                     hidden=self.registry.hidden_ids, may_save=lambda: self.lock.held)
        self._version = 0
        self._closed = False
        try:  # a store opened while another process writes does not wait: the next writer recovers
            self.recover(timeout=0.0)
        except LibraryBusyError:
            logger.info("another process is writing to %s; recovery is left to it", self.root)

    # -- queries ------------------------------------------------------------------------------

    def documents(self) -> list[DocumentRecord]:
        return self.registry.all()

    def document(self, doc_id: str) -> DocumentRecord:
        record = self.registry.get(doc_id)
        if record is None:
            raise KeyError(f"no document with id {doc_id!r}")
        return record

    def completed_ids(self) -> set[str]:
        """Documents with every chunk's vector stored."""
        return self.registry.ids_with_status("completed")

    def searchable_ids(self) -> set[str]:
        """Documents retrieval may return: completed ones and keyword-searchable ones still embedding."""
        return set().union(*(self.registry.ids_with_status(status) for status in SEARCHABLE))

    def keyword_only(self, doc_ids: Sequence[str] | None = None) -> list[KeywordOnly]:
        """Documents (of ``doc_ids``, or all) found by keywords while their vectors are still being stored."""
        return keyword_only(self, doc_ids)

    def busy(self, doc_id: str) -> Claim | None:
        """The running process working on ``doc_id``, if any."""
        return self.registry.live_claim(doc_id)

    @property
    def version(self) -> str:
        """Changes whenever any document is added, removed or re-indexed, by any process (keys caches)."""
        count, latest = self.registry.fingerprint()
        self.keywords.refresh()
        vectors = f"{self._connection.generation}.{self._connection.writes}"
        return f"{count}:{latest:.6f}:{self.keywords.generation}:{vectors}:{self._version}"

    def chunks(self, doc_id: str) -> list[Chunk]:
        return self.keywords.chunks_of(doc_id)

    def pages(self, doc_id: str) -> list[Page]:
        path = self.document_dir(doc_id) / "pages.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        return [Page(number=p["number"], text=p["text"], width=p["width"], height=p["height"],
                     words=[Word(w[0], tuple(w[1]), w[2], w[3]) for w in p["words"]]) for p in data]

    def document_dir(self, doc_id: str) -> Path:
        return self.files_dir / doc_id

    def stored_file(self, doc_id: str) -> Path:
        return Path(self.document(doc_id).stored_path)

    # -- the write lock -----------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, operation: str) -> Iterator[None]:
        """Hold the library's write lock for ``operation`` (re-entrant). Taking it first recovers dead
        writers' leftovers; each vector write brings this process's Chroma view up to date first, and
        each keyword write rebuilds from the stored tokens, so no write works from a stale view.

        Raises:
            LibraryBusyError: Another writer kept the lock for ``lock_timeout_s``.
        """
        with self.lock.hold(operation, timeout=self.lock_timeout_s, on_wait=self.on_wait):
            if self.lock.depth == 1:
                recovery.recover_interrupted(self)
            yield

    # -- writes -------------------------------------------------------------------------------

    def claim_new(self, record: DocumentRecord, data: bytes) -> Path:
        """Register a new document as ``pending``, owned by this process, and store its file."""
        with self.writing(f"storing {record.file_name}"):
            stored = self.document_dir(record.doc_id) / record.file_name
            self.registry.insert_claimed(DocumentRecord(**{**asdict(record), "stored_path": str(stored),
                                                           "status": "pending"}), current(), "ingest")
            reached("ingest.claimed")
            try:
                stored.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(stored, data, point="ingest.file")
            except BaseException:  # e.g. a full disk: leave nothing half-stored behind
                shutil.rmtree(stored.parent, ignore_errors=True)
                self.registry.delete(record.doc_id)
                raise
            return stored

    def write_vectors(self, model_chunks: dict[str, tuple[list[Chunk], Any]]) -> None:
        """Store chunk vectors, per embedding model (model_id -> (chunks, their vectors))."""
        with self.writing("writing vectors"):
            for model_id, (chunks, vectors) in model_chunks.items():
                self.vectors.add(model_id, [c.chunk_id for c in chunks], vectors, [c.text for c in chunks],
                                 [c.metadata() for c in chunks])
            self._version += 1

    def write_keywords(self, chunks_by_doc: dict[str, list[Chunk]]) -> None:
        """Store the chunks' texts and BM25 entries, replacing each document's earlier ones."""
        with self.writing("writing keywords"):
            self.keywords.add_many({doc_id: sorted(chunks, key=lambda c: c.index)
                                    for doc_id, chunks in chunks_by_doc.items()})
            self._version += 1

    def write_chunks(self, model_chunks: dict[str, tuple[list[Chunk], Any]]) -> None:
        """Store chunk vectors (per embedding model), then the chunks' BM25 entries, one rebuild in all.

        Args:
            model_chunks: model_id -> (chunks, their vectors), as ``rag.ingest.embedding.embed_chunks`` returns.
        """
        by_doc: dict[str, dict[str, Chunk]] = {}
        for chunks, _vectors in model_chunks.values():
            for chunk in chunks:  # an English chunk comes once per English model
                by_doc.setdefault(chunk.doc_id, {})[chunk.chunk_id] = chunk
        with self.writing("writing chunks"):
            self.write_vectors(model_chunks)
            self.write_keywords({doc_id: list(chunks.values()) for doc_id, chunks in by_doc.items()})

    def write_pages(self, doc_id: str, pages: list[Page]) -> None:
        data = [{"number": p.number, "text": p.text, "width": p.width, "height": p.height,
                 "words": [[w.text, list(w.box), w.start, w.end] for w in p.words]} for p in pages]
        with self.writing("writing page data"):
            target = self.document_dir(doc_id) / "pages.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, json.dumps(data, ensure_ascii=False).encode("utf-8"), point="pages")

    def purge_index_entries(self, doc_id: str) -> None:
        """Remove a document's vectors, BM25 entries and embedding count (not its registry row or file)."""
        with self.writing(f"purging {doc_id}"):
            self.vectors.delete_document(doc_id)
            self.keywords.delete(doc_id)
            self.ledger.delete(doc_id)
            self._version += 1

    def delete(self, doc_id: str) -> DocumentRecord:
        """Remove vectors, BM25 entries, stored file and registry row of one document.

        Raises:
            KeyError: No such document.
            DocumentBusyError: A running process is ingesting or re-indexing it (one still embedding its
                vectors is deleted: its next batch finds the row gone and stores nothing).
            LibraryBusyError: Another writer kept the library busy for ``lock_timeout_s``.
        """
        with self.writing(f"deleting {doc_id}"):
            record = self.document(doc_id)
            claim = self.registry.live_claim(doc_id)
            if claim is not None and claim.operation != "embed":
                raise DocumentBusyError(f"{record.file_name} ({doc_id}) is {claim.describe()}; "
                                        "delete it when that has finished")
            self.registry.update(doc_id, status="deleting")
            self.registry.claim(doc_id, current(), "delete")
            reached("delete.marked")
            recovery.finish_delete(self, doc_id)
            logger.info("deleted document %s (%s)", doc_id, record.file_name)
            return record

    def recover(self, *, timeout: float | None = None) -> list[str]:
        """Clean up after dead writers (interrupted ingests, re-indexes and deletes, orphan folders, a
        BM25 index saved from other rows) and re-tokenize keyword rows an older tokenizer made; returns the
        ids of the documents it marked failed or removed.

        Args:
            timeout: How long to wait for the write lock. Defaults to ``lock_timeout_s``.
        """
        with self.lock.hold("recovering", timeout=self.lock_timeout_s if timeout is None else timeout,
                            on_wait=self.on_wait):
            report = recovery.recover_interrupted(self)
            report.orphans.extend(recovery.remove_orphans(self))
            if not self.keywords.retokenize_if_stale():  # a library an older tokenizer indexed
                self.keywords.save_if_stale()
        if report.failed or report.deleted or report.orphans:
            logger.warning("recovered %s", report)
        return report.failed + report.deleted

    # -- housekeeping -------------------------------------------------------------------------

    def unsearched_vectors(self) -> dict[str, set[str]]:
        """Vectors that vector search skips: model id -> completed documents holding its vectors, for
        every model that no configured embedder makes (the default English model changed since those
        documents were indexed, or an embedding setting did). Re-indexing the documents fixes it.

        Loads the configured embedders (to learn their model ids) only when vectors are stored.
        """
        stored = [m for m in self.vectors.model_ids() if self.vectors.count(m)]
        stale = [m for m in stored if self.router.for_model_id(m) is None]
        completed = self.completed_ids()
        found = {m: self.vectors.doc_ids(m) & completed for m in stale}
        return {m: ids for m, ids in found.items() if ids}

    def stats(self) -> dict[str, Any]:
        records = self.registry.all()
        return {
            "documents": len(records),
            "completed": sum(r.status == "completed" for r in records),
            "chunks": len(self.keywords),
            "vector_models": self.vectors.model_ids(),
        }

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.registry.close()
        self.ledger.close()
        self.jobs.close()
        self.cache.close()
        self.keywords.close()
        release_connection(self._connection)


def record_dict(record: DocumentRecord) -> dict[str, Any]:
    return asdict(record)

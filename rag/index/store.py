"""The document store: registry, stored files, page data, vectors (Chroma) and keywords (BM25) as one.

Every document is written in the order registry row → stored file → vectors → keywords → pages →
``completed``. A row left ``pending``/``processing`` means the process died part-way; opening the
store purges whatever that document had written and marks it ``failed`` so it can be ingested again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, Sequence

import chromadb

from rag.config import RagConfig
from rag.documents import Chunk, DocumentRecord, Page, Word
from rag.index.embed_cache import EmbeddingCache
from rag.index.embedding_ledger import EmbeddingLedger
from rag.models.embedding_router import EmbedderRouter
from rag.index.keywords import KeywordIndex
from rag.index.registry import SEARCHABLE, Registry
from rag.index.searchable import KeywordOnly, keyword_only
from rag.index.vectors import VectorStore, connect

logger = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the previous ingest stopped before finishing; ingest the file again"


class DocumentStore:
    def __init__(self, config: RagConfig, router: EmbedderRouter, *,
                 client: chromadb.ClientAPI | None = None) -> None:
        self.config = config
        self.router = router
        root = config.data_path
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.files_dir = root / "files"
        self.registry = Registry(root / "registry.sqlite3")
        self.cache = EmbeddingCache(root / "embed_cache.sqlite3")
        self.ledger = EmbeddingLedger(root / "registry.sqlite3")  # vectors of keyword-searchable documents
        self.vectors = VectorStore(client or connect(config.storage), config.storage.collection)
        self.keywords = KeywordIndex(root / "bm25" / config.storage.collection)
        self.write_lock = threading.RLock()  # one writer at a time: ingest, delete, re-index
        self._version = 0
        self.recover()

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

    def keyword_only(self, doc_ids: Sequence[str] | None = None) -> list[KeywordOnly]:
        """Documents (of ``doc_ids``, or all) found by keywords while their vectors are still being stored."""
        return keyword_only(self, doc_ids)

    def searchable_ids(self) -> set[str]:
        """Documents retrieval may return: completed ones and keyword-searchable ones still embedding."""
        return set().union(*(self.registry.ids_with_status(status) for status in SEARCHABLE))

    @property
    def version(self) -> str:
        """Changes whenever any document is added, removed or re-indexed (keys retrieval caches)."""
        count, latest = self.registry.fingerprint()
        return f"{count}:{latest:.6f}:{self._version}"

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

    # -- writes -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, operation: str) -> Iterator[None]:
        """Hold the store's write lock for ``operation`` (re-entrant)."""
        with self.write_lock:
            yield

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

    def write_pages(self, doc_id: str, pages: list[Page]) -> None:
        data = [{"number": p.number, "text": p.text, "width": p.width, "height": p.height,
                 "words": [[w.text, list(w.box), w.start, w.end] for w in p.words]} for p in pages]
        target = self.document_dir(doc_id) / "pages.json"
        staging = target.with_suffix(".tmp")
        staging.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        staging.replace(target)

    def write_chunks(self, model_chunks: dict[str, tuple[list[Chunk], Any]]) -> None:
        """Store chunk vectors (per embedding model), then the chunks' BM25 entries, one rebuild in all.

        Args:
            model_chunks: model_id -> (chunks, their vectors), as ``rag.ingest.ingestor.embed_chunks`` returns.
        """
        by_doc: dict[str, list[Chunk]] = {}
        for chunks, _vectors in model_chunks.values():
            for chunk in chunks:
                by_doc.setdefault(chunk.doc_id, []).append(chunk)
        with self.writing("writing chunks"):
            self.write_vectors(model_chunks)
            self.write_keywords(by_doc)

    def purge_index_entries(self, doc_id: str) -> None:
        """Remove a document's vectors and BM25 entries (not its registry row or file)."""
        self.vectors.delete_document(doc_id)
        self.keywords.delete(doc_id)
        self._version += 1

    def delete(self, doc_id: str) -> DocumentRecord:
        """Remove vectors, BM25 entries, stored file and registry row of one document."""
        with self.write_lock:
            record = self.document(doc_id)
            self.purge_index_entries(doc_id)
            shutil.rmtree(self.document_dir(doc_id), ignore_errors=True)
            self.registry.delete(doc_id)
            self.ledger.delete(doc_id)
            logger.info("deleted document %s (%s)", doc_id, record.file_name)
            return record

    def recover(self) -> list[str]:
        """Clean up documents whose ingest died part-way; returns their ids."""
        recovered = []
        with self.write_lock:
            for record in self.registry.unfinished():
                self.purge_index_entries(record.doc_id)
                self.registry.update(record.doc_id, status="failed", error=INTERRUPTED, chunks=0)
                recovered.append(record.doc_id)
        if recovered:
            logger.warning("recovered %d interrupted ingests: %s", len(recovered), ", ".join(recovered))
        return recovered

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
        self.registry.close()
        self.ledger.close()
        self.cache.close()
        self.keywords.close()


def record_dict(record: DocumentRecord) -> dict[str, Any]:
    return asdict(record)

"""Ingestion: a file becomes a registry row, a stored copy, page data, BM25 entries and chunk vectors.

Order: parse → chunk → keyword index + page data (the document is keyword-searchable from here, status
``embedding``) → vectors, batch by batch (``rag.ingest.vector_fill``) → ``completed``. With a
``BackgroundEmbedder`` the vectors follow on its thread and the ingest returns as soon as the document
is searchable; without one they are stored before the ingest returns.

Every failure before the keyword index ends in a specific message and, once a registry row exists, a
``failed`` row; nothing stored for other documents is touched. A failure while embedding keeps the
document keyword-searchable with the error recorded, to be resumed. Stage timings are recorded for
the ingest benchmark; live progress goes to an ``IngestProgress``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from llama_index.core.llms import LLM

from rag.ingest.chunking import chunk_document
from rag.config import RagConfig
from rag.ingest.metadata import generate_metadata
from rag.documents import Chunk, DocumentRecord, ParsedDocument
from rag.index.embed_cache import EmbeddingCache
from rag.index.registry import SEARCHABLE
from rag.index.searchable import publish_keywords
from rag.models.embedding_router import model_id_of
from rag.ingest.background import BackgroundEmbedder
from rag.ingest.parse import SUPPORTED_EXTENSIONS, ParseError, parse_file
from rag.ingest.progress import IngestProgress, tracking
from rag.ingest.vector_fill import BATCH, fill_vectors
from rag.index.store import DocumentStore
from rag.models.priority import PROCESS_PRIORITY, Priority

logger = logging.getLogger(__name__)

Report = Callable[[str, float, str], None]  # (stage, fraction done 0..1, message), for bulk embedding
_EMBED_PROGRESS_BATCH = 64


class IngestError(ValueError):
    """A file was refused before anything was stored."""


@dataclass
class IngestResult:
    file_name: str
    status: str  # completed, searchable (vectors follow in the background, or stopped: see error), failed, duplicate
    doc_id: str = ""
    error: str = ""
    pages: int = 0
    chunks: int = 0
    language: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage

    @property
    def ok(self) -> bool:
        """Stored and searchable (every vector stored, or still being stored in the background)."""
        return self.status == "completed" or (self.status == "searchable" and not self.error)


def validate_file_name(name: str) -> str:
    """Reject names that could escape the storage folder or carry markup into the UI."""
    if not name or not name.strip():
        raise IngestError("the file has no name")
    if "/" in name or "\\" in name or "\x00" in name:
        raise IngestError(f"file name “{name}” contains a path separator; upload the file itself, not a path")
    if name in (".", "..") or ".." in name:
        raise IngestError(f"file name “{name}” contains '..'; rename the file")
    if re.search(r"[<>]", name):
        raise IngestError(f"file name “{name}” contains HTML characters (< or >); rename the file")
    if len(name) > 255:
        raise IngestError("file name is longer than 255 characters; rename the file")
    if not name.lower().endswith(SUPPORTED_EXTENSIONS):
        raise IngestError(f"{name}: unsupported file type; supported: {', '.join(SUPPORTED_EXTENSIONS)}")
    return name.strip()


class Ingestor:
    """Stores files in ``store`` as ``config`` says.

    Args:
        store: The document store.
        config: Chunking, embedding, storage and metadata settings.
        metadata_llm: Writes document metadata when ``metadata.enabled``. Defaults to none.
        background: Embeds vectors after the ingest returns. Defaults to none (embedded before it returns).
        priority: Embedding batches wait while a question is in flight. Defaults to the process's.
        batch_size: Chunks per embedding batch without ``background``. Defaults to ``vector_fill.BATCH``.
    """

    def __init__(self, store: DocumentStore, config: RagConfig, *, metadata_llm: LLM | None = None,
                 background: BackgroundEmbedder | None = None, priority: Priority = PROCESS_PRIORITY,
                 batch_size: int = BATCH) -> None:
        self.store = store
        self.config = config
        self.metadata_llm = metadata_llm
        self.background = background
        self.priority = priority
        self.batch_size = batch_size

    def ingest_path(self, path: Path, *, progress: IngestProgress | None = None) -> IngestResult:
        path = Path(path)
        try:
            size = path.stat().st_size
        except OSError as exc:
            return IngestResult(path.name, "failed", error=f"cannot read {path}: {exc.strerror}")
        if size > self._max_bytes:
            return IngestResult(path.name, "failed", error=self._too_large(path.name, size))
        return self.ingest_bytes(path.read_bytes(), path.name, progress=progress)

    def ingest_bytes(self, data: bytes, file_name: str, *, progress: IngestProgress | None = None) -> IngestResult:
        report = progress or IngestProgress(file_name)
        try:
            file_name = validate_file_name(file_name)
            if len(data) > self._max_bytes:
                raise IngestError(self._too_large(file_name, len(data)))
            if not data:
                raise IngestError(f"{file_name} is empty (0 bytes)")
        except IngestError as exc:
            return IngestResult(file_name, "failed", error=str(exc))

        sha256 = hashlib.sha256(data).hexdigest()
        doc_id = sha256[:16]
        with self.store.write_lock:
            existing = self.store.registry.by_sha256(sha256)
            if existing and existing.status in SEARCHABLE:
                return IngestResult(file_name, "duplicate", doc_id=existing.doc_id, pages=existing.pages,
                                    chunks=existing.chunks, language=existing.language,
                                    error=f"duplicate: this file is already stored as {existing.file_name!r} "
                                          f"(id {existing.doc_id}); not stored again")
            if existing:  # a failed or interrupted earlier attempt: start clean
                self.store.purge_index_entries(existing.doc_id)
            folder = self.store.document_dir(doc_id)
            folder.mkdir(parents=True, exist_ok=True)
            stored = folder / file_name
            stored.write_bytes(data)
            self.store.registry.upsert(DocumentRecord(
                doc_id=doc_id, file_name=file_name, sha256=sha256, status="pending",
                file_type=Path(file_name).suffix.lower().lstrip("."), stored_path=str(stored)))
        return self._process(doc_id, stored, file_name, report)

    def reindex(self, doc_id: str, *, progress: IngestProgress | None = None) -> IngestResult:
        """Parse, chunk and embed a stored document again with the current config."""
        with self.store.write_lock:
            record = self.store.document(doc_id)
            stored = Path(record.stored_path)
            if not stored.exists():
                error = f"the stored copy of {record.file_name} is missing; delete it and upload it again"
                self.store.registry.update(doc_id, status="failed", error=error)
                return IngestResult(record.file_name, "failed", doc_id=doc_id, error=error)
            self.store.purge_index_entries(doc_id)
            self.store.ledger.delete(doc_id)
            self.store.registry.update(doc_id, status="processing", error="")
        return self._process(doc_id, stored, record.file_name, progress or IngestProgress(record.file_name))

    # -- the pipeline -------------------------------------------------------------------------

    def _process(self, doc_id: str, stored: Path, file_name: str, report: IngestProgress) -> IngestResult:
        registry = self.store.registry
        registry.update(doc_id, status="processing", error="")
        report.doc_id = doc_id
        timings: dict[str, float] = {}
        begun = time.perf_counter()
        try:
            started = time.perf_counter()
            report.stage("parse")
            with tracking(report):
                parsed = parse_file(stored, file_name=file_name)
            timings["parse"] = time.perf_counter() - started

            started = time.perf_counter()
            report.stage("chunk", total=len(parsed.pages))
            chunks = self._chunk(parsed, doc_id)
            if not chunks:
                raise ParseError(f"{file_name}: no extractable text")
            timings["chunk"] = time.perf_counter() - started

            started = time.perf_counter()
            report.stage("keywords", total=len(chunks))
            language = _dominant_language(chunks)
            publish_keywords(self.store, doc_id, chunks, parsed.pages, pages=len(parsed.pages), language=language)
            report.searchable()
            timings["keywords"] = time.perf_counter() - started
            timings["searchable"] = time.perf_counter() - begun
        except Exception as exc:  # noqa: BLE001 - every failure must end in a failed row, not a crash
            message = str(exc) if isinstance(exc, (ParseError, IngestError)) else f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, (ParseError, IngestError)):
                logger.exception("ingest of %s failed", file_name)
            self.store.purge_index_entries(doc_id)
            self.store.ledger.delete(doc_id)
            registry.update(doc_id, status="failed", error=message, chunks=0)
            if isinstance(exc, ParseError):  # the bytes are useless; keep the row so the user sees why
                shutil.rmtree(self.store.document_dir(doc_id), ignore_errors=True)
            report.finish(error=message)
            return IngestResult(file_name, "failed", doc_id=doc_id, error=message, timings=timings)

        extra = self._metadata(parsed, timings)
        if extra:
            registry.update(doc_id, **extra)
        result = IngestResult(file_name, "searchable", doc_id=doc_id, pages=len(parsed.pages), chunks=len(chunks),
                              language=language, timings=timings)
        if self.background is not None:
            self.background.submit(doc_id, report)
            return result
        fill = fill_vectors(self.store, doc_id, batch_size=self.batch_size, priority=self.priority, progress=report)
        timings["embed"] = fill.seconds
        if fill.status == "completed":
            report.finish()
            result.status = "completed"
        else:
            result.error = fill.error or f"embedding {fill.status}"
            report.finish(error=result.error)
        return result

    def _chunk(self, parsed: ParsedDocument, doc_id: str) -> list[Chunk]:
        embed_fn = None
        if self.config.chunking.strategy == "semantic":
            from rag.text.language import detect_language

            embedder = self.store.router.for_language(detect_language(parsed.full_text[:5000]))
            embed_fn = lambda texts: np.asarray(embedder.get_text_embedding_batch(texts))  # noqa: E731
        return chunk_document(parsed, doc_id, self.config.chunking, embed_fn=embed_fn)

    def _metadata(self, parsed: ParsedDocument, timings: dict[str, float]) -> dict[str, str]:
        if not (self.config.metadata.enabled and self.metadata_llm):
            return {}
        started = time.perf_counter()
        extra = generate_metadata(self.metadata_llm, parsed.full_text[: self.config.metadata.max_input_chars])
        timings["metadata"] = time.perf_counter() - started
        return extra

    @property
    def _max_bytes(self) -> int:
        return int(self.config.storage.max_file_mb * 1024 * 1024)

    def _too_large(self, name: str, size: int) -> str:
        return (f"{name} is {size / 1024 / 1024:.1f} MB, over the {self.config.storage.max_file_mb:g} MB limit "
                "(storage.max_file_mb)")


def embed_chunks(store: DocumentStore, chunks: list[Chunk], *, report: Report | None = None,
                 cache: EmbeddingCache | None = None) -> dict[str, tuple[list[Chunk], np.ndarray]]:
    """Embed chunks with the model for their language, through the embedding cache.

    Returns model_id -> (chunks, vectors), ready for ``DocumentStore.write_chunks``.

    Args:
        store: Supplies the embedder router and, unless ``cache`` is given, the cache.
        chunks: The chunks to embed.
        report: Progress callback, called after each batch. Defaults to none.
        cache: Another embedding cache (benchmarks share one across temporary stores).
    """
    cache = cache or store.cache
    groups: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        groups[store.router.spec_for(chunk.language)].append(chunk)
    done, total = 0, len(chunks)
    by_model: dict[str, tuple[list[Chunk], np.ndarray]] = {}
    for spec, group in groups.items():
        embedder = store.router.for_spec(spec)
        model_id = model_id_of(embedder)
        vectors = []
        for start in range(0, len(group), _EMBED_PROGRESS_BATCH):
            batch = [c.text for c in group[start:start + _EMBED_PROGRESS_BATCH]]
            vectors.append(cache.embed(model_id, batch, embedder.get_text_embedding_batch))
            done += len(batch)
            if report:
                report("embed", done / total, f"Embedded {done}/{total} chunks ({model_id})")
        by_model[model_id] = (group, np.concatenate(vectors))
    return by_model


def _dominant_language(chunks: list[Chunk]) -> str:
    weights = Counter()
    for chunk in chunks:
        weights[chunk.language] += len(chunk.text)
    return weights.most_common(1)[0][0] if weights else ""

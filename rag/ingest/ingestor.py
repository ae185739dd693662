"""Ingestion: a file becomes a registry row, a stored copy, page data, BM25 entries and chunk vectors.

Phases, so the library's write lock is held only while something is written (``rag.index.store``):
*claim* (dedup by sha256, row and claim, stored file), *compute* (no lock: parse, chunk; the row is
``processing`` and owned by this process), *commit* (keywords and pages: keyword-searchable from here,
status ``embedding``) and *vectors*, batch by batch (``rag.ingest.vector_fill``), then ``completed``.
With a ``BackgroundEmbedder`` the ingest returns once the document is searchable. A long PDF with
tables or scans is first made searchable from its text layer (``rag.ingest.quick_pass``). A re-index
keeps the old index while it computes and swaps it in its commit; failing before, it keeps it.

A failure before the commit ends in a specific message and a ``failed`` row; nothing stored for other
documents is touched. A failure while embedding keeps the document keyword-searchable, with the error
recorded, to be resumed. Stage timings go to the result; live progress to an ``IngestProgress``.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np
from llama_index.core.llms import LLM

from rag.ingest.background import BackgroundEmbedder
from rag.ingest.chunking import chunk_document
from rag.config import RagConfig
from rag.ingest.metadata import generate_metadata
from rag.ingest.options import ParseOptions
from rag.ingest.progress import IngestProgress, tracking
from rag.ingest.quick_pass import publish_text_layer
from rag.ingest.vector_fill import BATCH, fill_vectors
from rag.documents import Chunk, DocumentRecord, ParsedDocument, page_ranges
from rag.ingest.parse import ParseError, parse_file
from rag.ingest.results import IngestError, IngestResult, validate_file_name
from rag.index.failpoints import reached
from rag.index.ownership import current
from rag.index.registry import SEARCHABLE
from rag.index.searchable import EMBEDDING, publish_keywords
from rag.index.store import DocumentStore, LibraryBusyError
from rag.models.priority import PROCESS_PRIORITY, Priority

logger = logging.getLogger(__name__)

__all__ = ["IngestError", "IngestResult", "Ingestor", "validate_file_name"]


class Ingestor:
    """Stores files in ``store`` as ``config`` says.

    Args:
        store: The document store.
        config: Chunking, embedding, ingest, storage and metadata settings.
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
        resume: IngestResult | None = None
        try:
            with self.store.writing(f"storing {file_name}"):
                existing = self.store.registry.by_sha256(sha256)
                if existing is not None:
                    claim = self.store.busy(existing.doc_id)
                    if existing.status == EMBEDDING and claim is None:  # stopped mid-embedding: go on, unlocked
                        resume = IngestResult(file_name, "searchable", doc_id=existing.doc_id, pages=existing.pages,
                                              chunks=existing.chunks, language=existing.language)
                    elif claim is not None or existing.status in SEARCHABLE:
                        why = (f"this file is {claim.describe()} as {existing.file_name!r}" if claim else
                               f"this file is already stored as {existing.file_name!r}")
                        return IngestResult(file_name, "duplicate", doc_id=existing.doc_id, pages=existing.pages,
                                            chunks=existing.chunks, language=existing.language,
                                            error=f"duplicate: {why} (id {existing.doc_id}); not stored again")
                    else:
                        self.store.purge_index_entries(existing.doc_id)  # a failed earlier attempt: start clean
                if resume is None:
                    stored = self.store.claim_new(DocumentRecord(
                        doc_id=doc_id, file_name=file_name, sha256=sha256, status="pending",
                        file_type=Path(file_name).suffix.lower().lstrip(".")), data)
        except LibraryBusyError as exc:
            return IngestResult(file_name, "failed", error=f"not stored: {exc}", busy=True)
        except Exception as exc:  # noqa: BLE001 - a full disk or a storage error: say so, store nothing
            logger.exception("could not store %s", file_name)
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
            return IngestResult(file_name, "failed", error=f"could not store {file_name}: {detail}")
        if resume is not None:
            return self._embed(resume.doc_id, resume, report)
        return self._process(doc_id, stored, file_name, report, reindex=None)

    def reindex(self, doc_id: str, *, progress: IngestProgress | None = None) -> IngestResult:
        """Parse, chunk and embed a stored document again with the current config.

        Raises:
            KeyError: No such document.
        """
        try:
            with self.store.writing(f"re-indexing {doc_id}"):
                record = self.store.document(doc_id)
                claim = self.store.busy(doc_id)
                if claim is not None and claim.operation != "embed":  # a re-index supersedes embedding
                    return IngestResult(record.file_name, "failed", doc_id=doc_id, busy=True,
                                        error=f"{record.file_name} is {claim.describe()}; re-index it when that "
                                              "has finished")
                stored = Path(record.stored_path)
                if not stored.exists():
                    return IngestResult(record.file_name, "failed", doc_id=doc_id,
                                        error=f"the stored copy of {record.file_name} is missing; delete it and "
                                              "upload it again")
                self.store.registry.claim(doc_id, current(), "reindex")
        except LibraryBusyError as exc:
            return IngestResult(doc_id, "failed", doc_id=doc_id, error=f"not re-indexed: {exc}", busy=True)
        except KeyError:
            raise
        except Exception as exc:  # noqa: BLE001 - a storage error: say so, change nothing
            logger.exception("could not start re-indexing %s", doc_id)
            return IngestResult(doc_id, "failed", doc_id=doc_id, error=f"not re-indexed: {type(exc).__name__}: {exc}")
        return self._process(doc_id, stored, record.file_name, progress or IngestProgress(record.file_name),
                             reindex=record)

    # -- the pipeline -------------------------------------------------------------------------

    def _process(self, doc_id: str, stored: Path, file_name: str, report: IngestProgress,
                 *, reindex: DocumentRecord | None) -> IngestResult:
        """Compute without the lock, commit the keywords under it, then the vectors batch by batch.
        ``reindex`` is the record before a re-index."""
        registry = self.store.registry
        if reindex is None:
            registry.update(doc_id, status="processing", error="")
        report.doc_id = doc_id
        options = ParseOptions.from_config(self.config)
        timings: dict[str, float] = {}
        committing = False
        begun = time.perf_counter()
        try:
            if reindex is None:  # a re-index keeps its old index searchable meanwhile instead
                quick = publish_text_layer(self, doc_id, stored, file_name, options, report)
                if quick is not None:
                    timings["searchable"] = quick
            started = time.perf_counter()
            report.stage("parse")
            with tracking(report):
                parsed = parse_file(stored, file_name=file_name, options=options)
            timings["parse"] = time.perf_counter() - started

            started = time.perf_counter()
            report.stage("chunk", total=len(parsed.pages))
            chunks = self._chunk(parsed, doc_id)
            if not chunks:
                raise ParseError(f"{file_name}: no extractable text")
            timings["chunk"] = time.perf_counter() - started
            language = _dominant_language(chunks)
            notes = list(parsed.notes)
            ocr_pages = page_ranges(parsed.ocr_pages)
            tables = sum(1 for page in parsed.pages for table in page.tables if table.part == 1)

            started = time.perf_counter()
            report.stage("keywords", total=len(chunks))
            with self.store.writing(f"indexing {file_name}"):
                self._check_claim(doc_id, file_name)
                committing = True
                reached("commit.begin")
                if reindex is not None:  # from here the old index goes: a crash now must not look complete
                    registry.update(doc_id, status="processing")
                    reached("reindex.marked")
                    self.store.purge_index_entries(doc_id)
                publish_keywords(self.store, doc_id, chunks, parsed.pages, pages=len(parsed.pages), language=language,
                                 ocr_pages=ocr_pages, tables=tables, notes="\n".join(notes))
                registry.claim(doc_id, current(), "embed")  # the vectors are this process's to store now
                reached("ingest.searchable")
            timings["keywords"] = time.perf_counter() - started
            timings.setdefault("searchable", time.perf_counter() - begun)
            report.searchable()
        except Exception as exc:  # noqa: BLE001 - every failure must end in a failed row, not a crash
            message = (str(exc) if isinstance(exc, (ParseError, IngestError, LibraryBusyError))
                       else f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, (ParseError, IngestError, LibraryBusyError)):
                logger.exception("ingest of %s failed", file_name)
            result = self._fail(doc_id, file_name, exc, message, timings, reindex=reindex, committing=committing)
            report.finish(error=result.error)
            return result

        self._add_metadata(doc_id, chunks, language, timings, notes, report)  # searchable already; the LLM is slow
        result = IngestResult(file_name, "searchable", doc_id=doc_id, pages=len(parsed.pages), chunks=len(chunks),
                              language=language, timings=timings, ocr_pages=ocr_pages, tables=tables, notes=notes)
        return self._embed(doc_id, result, report)

    def _embed(self, doc_id: str, result: IngestResult, report: IngestProgress) -> IngestResult:
        """Hand the vectors to the background embedder, or store them now (``result`` says how it went)."""
        if self.background is not None:
            self.background.submit(doc_id, report)
            return result
        fill = fill_vectors(self.store, doc_id, batch_size=self.batch_size, priority=self.priority, progress=report)
        result.timings["embed"] = fill.seconds
        if fill.status == "completed":
            result.status = "completed"
        else:
            result.error = fill.error or f"embedding {fill.status}"
            result.busy = fill.status == "busy"
        report.finish(error="" if fill.status == "completed" else result.error)
        return result

    def _check_claim(self, doc_id: str, file_name: str) -> None:
        claim = self.store.registry.claim_of(doc_id)
        if self.store.registry.get(doc_id) is None or claim is None or claim.owner != current():
            raise IngestError(f"{file_name} was deleted or reset by another process while it was being "
                              "indexed; nothing was stored")

    def _fail(self, doc_id: str, file_name: str, exc: Exception, message: str, timings: dict[str, float], *,
              reindex: DocumentRecord | None, committing: bool) -> IngestResult:
        registry = self.store.registry
        result = IngestResult(file_name, "failed", doc_id=doc_id, error=message, timings=timings,
                              busy=isinstance(exc, LibraryBusyError))
        try:
            with self.store.writing(f"cleaning up after {file_name}"):
                claim = registry.claim_of(doc_id)
                if registry.get(doc_id) is None or claim is None or claim.owner != current():
                    return result  # deleted or recovered meanwhile: nothing of ours to undo
                if reindex is not None and not committing:  # the old index was never touched
                    registry.release(doc_id)
                    if reindex.status == "completed":
                        result.error = f"re-index failed, the previous index is kept: {message}"
                    else:
                        registry.update(doc_id, error=message)
                    return result
                self.store.purge_index_entries(doc_id)
                registry.update(doc_id, status="failed", error=message, chunks=0)
                registry.release(doc_id)
                if isinstance(exc, ParseError) and reindex is None:  # the bytes are useless; the row says why
                    shutil.rmtree(self.store.document_dir(doc_id), ignore_errors=True)
        except LibraryBusyError as busy:
            logger.error("could not clean up after %s (%s); it is cleaned up when this process ends", file_name, busy)
            result.error = f"{message} (clean-up postponed: {busy})"
        return result

    def _chunk(self, parsed: ParsedDocument, doc_id: str) -> list[Chunk]:
        embed_fn = None
        if self.config.chunking.strategy == "semantic":
            from rag.text.language import detect_language

            embedder = self.store.router.for_language(detect_language(parsed.full_text[:5000]))
            embed_fn = lambda texts: np.asarray(embedder.get_text_embedding_batch(texts))  # noqa: E731
        return chunk_document(parsed, doc_id, self.config.chunking, embed_fn=embed_fn)

    def _add_metadata(self, doc_id: str, chunks: list[Chunk], language: str, timings: dict[str, float],
                      notes: list[str], report: IngestProgress) -> None:
        """Summary, keywords, topics and key phrases from the LLM; a failure is a note, never a failed ingest."""
        if not self.config.metadata.enabled:
            return
        fields: dict[str, str] = {}
        if self.metadata_llm is None:
            notes.append("metadata: not written — metadata.enabled is on but no LLM was given to the ingest")
        else:
            report.stage("metadata")
            started = time.perf_counter()
            texts = [c.text for c in chunks if c.kind != "table"] or [c.text for c in chunks]
            result = generate_metadata(self.metadata_llm, texts, language=language,
                                       max_input_chars=self.config.metadata.max_input_chars)
            timings["metadata"] = time.perf_counter() - started
            if result.error:
                notes.append(f"metadata: {result.error}")
            fields = result.registry_fields() if result.summary else {}
        try:
            with self.store.writing(f"writing the metadata of {doc_id}"):
                record, claim = self.store.registry.get(doc_id), self.store.registry.claim_of(doc_id)
                if record is not None and record.status == EMBEDDING and claim is not None and claim.owner == current():
                    self.store.registry.update(doc_id, notes="\n".join(notes), **fields)
        except LibraryBusyError as exc:
            logger.warning("the metadata of %s was not stored: %s", doc_id, exc)

    @property
    def _max_bytes(self) -> int:
        return int(self.config.storage.max_file_mb * 1024 * 1024)

    def _too_large(self, name: str, size: int) -> str:
        return (f"{name} is {size / 1024 / 1024:.1f} MB, over the {self.config.storage.max_file_mb:g} MB limit "
                "(storage.max_file_mb)")


def _dominant_language(chunks: list[Chunk]) -> str:
    weights = Counter()
    for chunk in chunks:
        weights[chunk.language] += len(chunk.text)
    return weights.most_common(1)[0][0] if weights else ""

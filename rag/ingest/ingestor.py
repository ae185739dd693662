"""Ingestion: a file becomes a registry row, a stored copy, page data, chunk vectors and BM25 entries.

Three phases, so the library's write lock is held only while something is written (see
``rag.index.store``): *claim* (under the lock: dedup by sha256, registry row and claim, stored file),
*compute* (no lock: parse, chunk, embed, optional LLM metadata; the row is ``processing`` and owned
by this process, so no other process's recovery touches it), and *commit* (under the lock: vectors,
keywords, pages, ``completed``). A re-index computes the same way while the document stays
``completed`` with its old index, and swaps the index in its commit; if it fails before that, the old
index and the stored file are kept.

Every failure ends in a specific message and, once a registry row exists, a ``failed`` row; nothing
stored for other documents is touched. Stage timings are recorded for the ingest benchmark.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from llama_index.core.llms import LLM

from rag.ingest.chunking import chunk_document
from rag.ingest.embedding import Progress, embed_chunks  # a module global here: crash tests replace it
from rag.config import RagConfig
from rag.ingest.metadata import generate_metadata
from rag.ingest.options import ParseOptions
from rag.documents import Chunk, DocumentRecord, ParsedDocument, page_ranges
from rag.ingest.parse import SUPPORTED_EXTENSIONS, ParseError, parse_file
from rag.index.failpoints import reached
from rag.index.ownership import current
from rag.index.store import DocumentStore, LibraryBusyError

logger = logging.getLogger(__name__)


class IngestError(ValueError):
    """A file was refused before anything was stored."""


@dataclass
class IngestResult:
    file_name: str
    status: str  # completed, failed, duplicate
    doc_id: str = ""
    error: str = ""
    pages: int = 0
    chunks: int = 0
    language: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    ocr_pages: str = ""  # "1-3, 7": pages read by OCR
    tables: int = 0
    notes: list[str] = field(default_factory=list)  # what some pages lost, and why
    busy: bool = False  # refused because another writer held the library or the document; try again later

    @property
    def ok(self) -> bool:
        return self.status == "completed"


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
    def __init__(self, store: DocumentStore, config: RagConfig, *, metadata_llm: LLM | None = None) -> None:
        self.store = store
        self.config = config
        self.metadata_llm = metadata_llm

    def ingest_path(self, path: Path, *, progress: Progress | None = None) -> IngestResult:
        path = Path(path)
        try:
            size = path.stat().st_size
        except OSError as exc:
            return IngestResult(path.name, "failed", error=f"cannot read {path}: {exc.strerror}")
        if size > self._max_bytes:
            return IngestResult(path.name, "failed", error=self._too_large(path.name, size))
        return self.ingest_bytes(path.read_bytes(), path.name, progress=progress)

    def ingest_bytes(self, data: bytes, file_name: str, *, progress: Progress | None = None) -> IngestResult:
        report = progress or (lambda stage, fraction, message: None)
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
        try:
            with self.store.writing(f"storing {file_name}"):
                existing = self.store.registry.by_sha256(sha256)
                if existing is not None:
                    claim = self.store.busy(existing.doc_id)
                    if claim is not None or existing.status == "completed":
                        why = (f"this file is {claim.describe()} as {existing.file_name!r}" if claim else
                               f"this file is already stored as {existing.file_name!r}")
                        return IngestResult(file_name, "duplicate", doc_id=existing.doc_id, pages=existing.pages,
                                            chunks=existing.chunks, language=existing.language,
                                            error=f"duplicate: {why} (id {existing.doc_id}); not stored again")
                    self.store.purge_index_entries(existing.doc_id)  # a failed earlier attempt: start clean
                stored = self.store.claim_new(DocumentRecord(
                    doc_id=doc_id, file_name=file_name, sha256=sha256, status="pending",
                    file_type=Path(file_name).suffix.lower().lstrip(".")), data)
        except LibraryBusyError as exc:
            return IngestResult(file_name, "failed", error=f"not stored: {exc}", busy=True)
        except Exception as exc:  # noqa: BLE001 - a full disk or a storage error: say so, store nothing
            logger.exception("could not store %s", file_name)
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
            return IngestResult(file_name, "failed", error=f"could not store {file_name}: {detail}")
        return self._process(doc_id, stored, file_name, report, reindex=None)

    def reindex(self, doc_id: str, *, progress: Progress | None = None) -> IngestResult:
        """Parse, chunk and embed a stored document again with the current config.

        Raises:
            KeyError: No such document.
        """
        try:
            with self.store.writing(f"re-indexing {doc_id}"):
                record = self.store.document(doc_id)
                claim = self.store.busy(doc_id)
                if claim is not None:
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
        return self._process(doc_id, stored, record.file_name, progress or (lambda *a: None), reindex=record)

    # -- the pipeline -------------------------------------------------------------------------

    def _process(self, doc_id: str, stored: Path, file_name: str, report: Progress,
                 *, reindex: DocumentRecord | None) -> IngestResult:
        """Compute without the lock, then commit under it. ``reindex`` is the record before a re-index."""
        registry = self.store.registry
        if reindex is None:
            registry.update(doc_id, status="processing", error="")
        timings: dict[str, float] = {}
        committing = False
        try:
            started = time.perf_counter()
            report("parse", 0.0, f"Parsing {file_name}")
            parsed = parse_file(stored, file_name=file_name, options=ParseOptions.from_config(self.config))
            timings["parse"] = time.perf_counter() - started

            started = time.perf_counter()
            report("chunk", 0.0, f"Chunking {len(parsed.pages)} pages")
            chunks = self._chunk(parsed, doc_id)
            if not chunks:
                raise ParseError(f"{file_name}: no extractable text")
            timings["chunk"] = time.perf_counter() - started

            started = time.perf_counter()
            by_model = embed_chunks(self.store, chunks, report=report)
            timings["embed"] = time.perf_counter() - started
            language = _dominant_language(chunks)
            notes = list(parsed.notes)
            extra = self._metadata(chunks, language, timings, notes, report)  # before the lock: the LLM is slow
            ocr_pages = page_ranges(parsed.ocr_pages)
            tables = sum(1 for page in parsed.pages for table in page.tables if table.part == 1)

            started = time.perf_counter()
            report("store", 0.0, "Storing vectors and keywords")
            with self.store.writing(f"indexing {file_name}"):
                self._check_claim(doc_id, file_name)
                committing = True
                reached("commit.begin")
                if reindex is not None:  # from here the old index goes: a crash now must not look complete
                    registry.update(doc_id, status="processing")
                    reached("reindex.marked")
                    self.store.purge_index_entries(doc_id)
                self.store.write_vectors(by_model)
                self.store.write_keywords({doc_id: chunks})
                self.store.write_pages(doc_id, parsed.pages)
                registry.update(doc_id, status="completed", pages=len(parsed.pages), chunks=len(chunks),
                                language=language, error="", ocr_pages=ocr_pages, tables=tables,
                                notes="\n".join(notes), **extra)
                reached("ingest.completed")
                registry.release(doc_id)
            timings["store"] = time.perf_counter() - started
            report("done", 1.0, f"{file_name}: {len(chunks)} chunks from {len(parsed.pages)} pages")
            return IngestResult(file_name, "completed", doc_id=doc_id, pages=len(parsed.pages),
                                chunks=len(chunks), language=language, timings=timings, ocr_pages=ocr_pages,
                                tables=tables, notes=notes)
        except Exception as exc:  # noqa: BLE001 - every failure must end in a failed row, not a crash
            message = (str(exc) if isinstance(exc, (ParseError, IngestError, LibraryBusyError))
                       else f"{type(exc).__name__}: {exc}")
            if not isinstance(exc, (ParseError, IngestError, LibraryBusyError)):
                logger.exception("ingest of %s failed", file_name)
            return self._fail(doc_id, file_name, exc, message, timings, reindex=reindex, committing=committing)

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

    def _metadata(self, chunks: list[Chunk], language: str, timings: dict[str, float], notes: list[str],
                  report: Progress) -> dict[str, str]:
        """Summary, keywords, topics and key phrases from the LLM; a failure is a note, never a failed ingest."""
        if not self.config.metadata.enabled:
            return {}
        if self.metadata_llm is None:
            notes.append("metadata: not written — metadata.enabled is on but no LLM was given to the ingest")
            return {}
        report("metadata", 0.0, "Writing the summary and keywords")
        started = time.perf_counter()
        texts = [c.text for c in chunks if c.kind != "table"] or [c.text for c in chunks]
        result = generate_metadata(self.metadata_llm, texts, language=language,
                                   max_input_chars=self.config.metadata.max_input_chars)
        timings["metadata"] = time.perf_counter() - started
        if result.error:
            notes.append(f"metadata: {result.error}")
        return result.registry_fields() if result.summary else {}

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

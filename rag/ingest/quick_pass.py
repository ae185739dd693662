"""Keyword-searchable in seconds when tables or scanned pages are slow: a first pass over the text layer.

Finding tables costs 0.1–0.3 s per ruled page (about 10 s for the 183-page annual report) and OCR
seconds per scanned page, while the text layer of the same report reads in under a second. So a new
PDF of at least ``MIN_PAGES`` pages whose full parse finds tables or OCRs is first parsed without
either, chunked and published as ``preliminary`` (keyword-searchable, no vector; still claimed by the
ingest); the full pass then replaces those keywords and pages with its own, and the vectors are
embedded from those. A shorter PDF reads fast anyway, and a PDF with no text layer (a scan) has nothing
to show early: both skip this pass. If the ingest dies between the passes, recovery purges the
preliminary version and marks the document failed, as for any interrupted ingest.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.index.searchable import PRELIMINARY, publish_keywords
from rag.ingest.options import ParseOptions
from rag.ingest.parse import ParseError, parse_file
from rag.ingest.progress import IngestProgress, tracking

logger = logging.getLogger(__name__)

MIN_PAGES = 20


def publish_text_layer(ingestor: Any, doc_id: str, stored: Path, file_name: str, options: ParseOptions,
                       progress: IngestProgress) -> float | None:
    """Publish a text-layer-only version of a new document; seconds from now until it was searchable, or
    None when the full parse is quick anyway or the text layer holds nothing.

    Args:
        ingestor: The ``Ingestor`` at work (its store, chunking and claim check).
        doc_id: The new document, claimed by this process.
        stored: Its stored file.
        file_name: Its name.
        options: The full parse's options.
        progress: Advanced through parse, chunk and keywords.
    """
    if not (options.tables or options.ocr) or stored.suffix.lower() != ".pdf" or _page_count(stored) < MIN_PAGES:
        return None
    started = time.perf_counter()
    quick = replace(options, tables=False, ocr=False)
    try:
        progress.stage("parse")
        with tracking(progress):
            parsed = parse_file(stored, file_name=file_name, options=quick)
        progress.stage("chunk", total=len(parsed.pages))
        chunks = ingestor._chunk(parsed, doc_id)
    except ParseError as exc:  # e.g. a scan: no text layer; the full pass says what is wrong, if anything
        logger.info("%s: no quick text-layer pass (%s)", file_name, exc)
        return None
    if not chunks or not any(page.text.strip() for page in parsed.pages):
        return None
    progress.stage("keywords", total=len(chunks))
    store = ingestor.store
    with store.writing(f"indexing the text layer of {file_name}"):
        ingestor._check_claim(doc_id, file_name)
        publish_keywords(store, doc_id, chunks, parsed.pages, status=PRELIMINARY, pages=len(parsed.pages))
    progress.searchable()
    return time.perf_counter() - started


def _page_count(path: Path) -> int:
    import pymupdf

    try:
        with pymupdf.open(path) as pdf:
            return pdf.page_count
    except Exception:  # noqa: BLE001 - a broken file: the full pass says what is wrong
        return 0

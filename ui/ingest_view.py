"""The Documents page's view of indexing: each document's stage, counters, rate and time left, and the
library's two searchable states (keyword-searchable while embedding, completed).

File names and error messages come from documents and uploads: every label goes through ``label``
(progress and alert texts render Markdown) and table cells through ``plain``.
"""

from __future__ import annotations

from typing import Sequence

import streamlit as st

from rag.documents import DocumentRecord
from rag.index.searchable import KeywordOnly
from rag.ingest.progress import ProgressView
from ui.safe_text import label, plain


def show_progress(view: ProgressView, *, searchable: bool = False) -> None:
    """A progress bar for one document: stage, n/N, rate and time left, from its counters."""
    now = " · keyword-searchable now" if searchable and view.stage == "embedding" else ""
    st.progress(view.fraction, text=f"{label(view.file_name)} — {label(view.text())}{now}")


def status_of(record: DocumentRecord, partial: KeywordOnly | None) -> str:
    """The library table's status: completed, keyword-searchable while embedding, failed, ..."""
    if record.status == "preliminary":
        return "keyword-searchable (text layer), reading tables and scans"
    if record.status != "embedding":
        return record.status
    if partial is not None and partial.error:
        return "keyword-searchable, embedding stopped"
    return "keyword-searchable, embedding"


def vectors_of(record: DocumentRecord, partial: KeywordOnly | None) -> str:
    """"120/1226": vectors stored of all the document's vectors (an English chunk has one per English model)."""
    if record.status == "completed":
        return "all"
    if record.status in ("embedding", "preliminary"):
        return f"{partial.embedded}/{partial.total}" if partial else "0"
    return "–"


def library_rows(records: Sequence[DocumentRecord], partial: dict[str, KeywordOnly]) -> list[dict]:
    """One plain-text table row per document."""
    rows = []
    for r in records:
        state = partial.get(r.doc_id)
        error = f"embedding stopped: {state.error}" if state is not None and state.error else (r.error or "")
        rows.append({"name": plain(r.file_name), "pages": r.pages, "chunks": r.chunks,
                     "vectors": vectors_of(r, state), "tables": r.tables, "OCR'd pages": r.ocr_pages,
                     "language": r.language or "–", "status": status_of(r, state), "error": plain(error),
                     "id": r.doc_id})
    return rows


def keyword_only_notice(record: DocumentRecord, partial: KeywordOnly | None) -> None:
    """What a document still embedding can and cannot be found by."""
    embedded, total = (partial.embedded, partial.total) if partial else (0, record.chunks)
    st.info(f"Keyword-searchable now. {embedded} of its {total} vectors are stored ({record.chunks} chunks; an "
            "English chunk has one per English embedder); vector search finds only those until embedding finishes.",
            icon=":material/hourglass_top:")
    if partial is not None and partial.error:
        st.warning(f"Embedding stopped: {label(partial.error)}", icon=":material/warning:")

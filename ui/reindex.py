"""Re-index several documents in the page, with a status box and a progress bar."""

from __future__ import annotations

from typing import Sequence

import streamlit as st

from rag.config import RagConfig
from rag.documents import DocumentRecord
from rag.index.store import DocumentStore
from ui.safe_text import escape_markdown, label


def reindex_documents(store: DocumentStore, config: RagConfig, records: Sequence[DocumentRecord]) -> list[str]:
    """Parse, chunk and embed ``records`` again with ``config``; returns one "file: error" line per failure."""
    from rag.ingest.ingestor import Ingestor

    ingestor = Ingestor(store, config)
    failed = []
    with st.status(f"Re-indexing {len(records)} document(s)…", expanded=True) as status:
        bar = st.progress(0.0)
        for number, record in enumerate(records, start=1):
            bar.progress((number - 1) / len(records), text=f"{label(record.file_name)} ({number}/{len(records)})")
            result = ingestor.reindex(record.doc_id)
            if not result.ok:
                failed.append(f"{record.file_name}: {result.error}")
        bar.progress(1.0, text="Done")
        status.update(label=f"Re-indexed {len(records) - len(failed)} of {len(records)} document(s)",
                      state="error" if failed else "complete")
    for message in failed:
        st.error(escape_markdown(message))
    return failed

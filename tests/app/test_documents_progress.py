"""The Documents page shows both searchable states (keyword-searchable while embedding, completed), each
document's embedding progress from its counters, and resumes a stalled embedding with one click."""

from __future__ import annotations

import time
from pathlib import Path

from rag.index.searchable import stop_embedding
from rag.ingest.ingestor import Ingestor
from rag.models.priority import PROCESS_PRIORITY
from tests import fixtures, hostile
from tests.app.conftest import ingest, open_app
from tests.app.markup import live
from tests.markdown_check import shown_text


class Nobody:
    """A background embedder that never embeds: the document stays keyword-only."""

    def submit(self, doc_id, progress=None):
        return progress


def _keyword_only(pdf: Path) -> str:
    from ui.resources import base_config, get_store

    result = Ingestor(get_store(base_config()), base_config(), background=Nobody()).ingest_path(pdf)
    assert result.status == "searchable" and not result.error
    return result.doc_id


def test_library_shows_keyword_searchable_and_completed_documents(app_data: Path, tmp_path: Path) -> None:
    from ui.resources import base_config, get_ingest_queue

    ingest(fixtures.make_english_pdf(tmp_path))
    doc_id = _keyword_only(hostile.make_hostile_pdf(tmp_path))
    question = PROCESS_PRIORITY.foreground()
    question.__enter__()  # a question in flight: the app's embedder picks the document up and waits
    try:
        embedder = get_ingest_queue(base_config()).embedder  # the app's, which resumes the document
        deadline = time.monotonic() + 30
        while (embedder.progress(doc_id) is None or embedder.progress(doc_id).current_stage != "embedding") \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        app = open_app("pages/documents.py")
        app.run()
        assert not app.exception
        table = app.dataframe[0].value
        rows = {name: (status, vectors) for name, status, vectors in zip(table["name"], table["status"],
                                                                           table["vectors"])}
        completed_chunks = int(table.loc[table["name"] == "report.pdf", "chunks"].item())
        hostile_chunks = int(table.loc[table["id"] == doc_id, "chunks"].item())
        # progress counts vectors: two per English chunk (both English models), one per Chinese chunk
        from ui.resources import get_store

        vectors = sum(1 if c.language == "zh" else 2 for c in get_store(base_config()).chunks(doc_id))
        assert vectors > hostile_chunks and completed_chunks > 0
        assert rows == {"report.pdf": ("completed", "all"),
                        hostile.SHOWN_NAME: ("keyword-searchable, embedding", f"0/{vectors}")}
        assert any("1 ready, 1 keyword-searchable while embedding" in s.value for s in app.subheader)
        bars = [shown_text(bar.text) for bar in app.get("progress")]
        assert any(text.startswith(f"{hostile.SHOWN_NAME} — embedding 0/{vectors} vectors") for text in bars)
        assert live(app) == []  # the hostile name is shown as text everywhere

        inspect = next(s for s in app.selectbox if s.label == "Inspect a document")
        inspect.set_value(doc_id).run()
        assert any(f"0 of its {vectors} vectors are stored ({hostile_chunks} chunks" in info.value for info in app.info)
        assert [e for e in app.expander if e.label.startswith("#0")]  # its chunks can be inspected already
    finally:
        question.__exit__(None, None, None)
    get_ingest_queue(base_config()).embedder.wait(timeout=60)
    app.run()
    assert set(app.dataframe[0].value["status"]) == {"completed"}


def test_a_stalled_embedding_is_resumed_with_one_click(app_data: Path, tmp_path: Path) -> None:
    from ui.resources import base_config, get_ingest_queue, get_store

    app = open_app("pages/documents.py")
    app.run()  # the app's embedder starts with nothing to resume
    doc_id = _keyword_only(fixtures.make_english_pdf(tmp_path))
    stop_embedding(get_store(base_config()), doc_id, "the disk was full")
    app.run()
    assert not app.exception
    assert any("1 document(s) are keyword-searchable but their embedding is not running" in w.value
               for w in app.warning)
    assert app.dataframe[0].value["error"].tolist() == ["embedding stopped: the disk was full"]

    next(b for b in app.button if b.label == "Resume embedding 1 document(s)").click().run()
    get_ingest_queue(base_config()).embedder.wait(timeout=60)
    app.run()
    assert app.dataframe[0].value["status"].tolist() == ["completed"]
    assert not [b for b in app.button if b.label.startswith("Resume embedding")]

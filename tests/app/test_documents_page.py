"""The Documents page in Streamlit's AppTest: upload, background ingest, table, inspect, delete."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import fixtures
from tests.app.conftest import open_app



@pytest.fixture
def app(app_data: Path) -> AppTest:
    return open_app("pages/documents.py")


def _queue():
    from ui.resources import _ingest_queue

    return _ingest_queue


def test_upload_ingests_in_the_background_and_lists_the_document(app: AppTest, tmp_path: Path) -> None:
    app.run()
    assert not app.exception
    assert any("No documents yet" in info.value for info in app.info)

    pdf = fixtures.make_english_pdf(tmp_path)
    broken = fixtures.make_corrupt_pdf(tmp_path)
    app.file_uploader[0].set_value([(pdf.name, pdf.read_bytes(), "application/pdf"),
                                    (broken.name, broken.read_bytes(), "application/pdf")])
    app.button[0].click().run()  # the form's submit button
    from ui.resources import base_config, get_ingest_queue

    get_ingest_queue(base_config()).wait(timeout=120)
    app.run()
    assert not app.exception
    table = app.dataframe[0].value
    statuses = dict(zip(table["name"], table["status"]))
    assert statuses == {pdf.name: "completed", broken.name: "failed"}
    assert "damaged" in table.loc[table["name"] == broken.name, "error"].item()


def test_duplicate_upload_is_reported(app: AppTest, tmp_path: Path) -> None:
    pdf = fixtures.make_english_pdf(tmp_path)
    app.run()
    from ui.resources import base_config, get_ingest_queue

    for _ in range(2):
        app.file_uploader[0].set_value([(pdf.name, pdf.read_bytes(), "application/pdf")])
        app.button[0].click().run()
        get_ingest_queue(base_config()).wait(timeout=120)
    app.run()
    assert len(app.dataframe[0].value) == 1
    assert any("already stored" in info.value for info in app.info)


def test_delete_removes_the_document(app: AppTest, tmp_path: Path) -> None:
    pdf = fixtures.make_english_pdf(tmp_path)
    app.run()
    from ui.resources import base_config, get_ingest_queue

    app.file_uploader[0].set_value([(pdf.name, pdf.read_bytes(), "application/pdf")])
    app.button[0].click().run()
    get_ingest_queue(base_config()).wait(timeout=120)
    app.run()
    delete = next(b for b in app.button if b.label == "Delete")
    delete.click().run()
    assert not app.exception
    assert any("No documents yet" in info.value for info in app.info)


def test_documents_embedded_by_a_model_no_longer_configured_are_flagged_and_reindexed(
        app_data: Path, tmp_path: Path, monkeypatch) -> None:
    import streamlit as st

    from rag.config import EmbeddingConfig
    from tests.app.conftest import ingest

    pdf = fixtures.make_english_pdf(tmp_path)
    ingest(pdf)
    app = open_app("pages/documents.py")
    app.run()
    assert not app.warning  # indexed with the configured models

    # the English model changes (as when the default changed), and the server restarts
    monkeypatch.setenv("RAG_EMBEDDING__ENGLISH_MODEL", "bundled:another")
    st.cache_resource.clear()
    app = open_app("pages/documents.py")
    app.run()
    assert not app.exception
    warning = app.warning[0].value
    english = EmbeddingConfig().english_model.split(":")[-1]  # the fake router names models hash-<spec>
    assert f"1 document(s) were embedded with hash-{english}" in warning and "re-indexed" in warning

    next(b for b in app.button if b.label == "Re-index 1 document(s)").click().run()
    assert not app.exception
    assert not app.error
    from ui.resources import base_config, get_store

    store = get_store(base_config())
    assert store.unsearched_vectors() == {}
    assert store.vectors.count("hash-another") > 0 and store.documents()[0].status == "completed"
    app.run()
    assert not app.warning

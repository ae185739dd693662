"""A long PDF is searchable from its text layer while its tables and scans are read; a re-ingest of a
document left keyword-only resumes its vectors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import rag.ingest.ingestor as ingest_module
from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.ingest.progress import IngestProgress
from rag.ingest.quick_pass import MIN_PAGES
from tests import fixtures


class Nobody:
    def submit(self, doc_id, progress=None):
        return progress


def test_a_long_pdf_is_found_by_keywords_before_its_tables_are_read(store: DocumentStore, config: RagConfig,
                                                                    tmp_path: Path, monkeypatch) -> None:
    pdf = fixtures.make_english_pdf(tmp_path, pages=MIN_PAGES)
    reading, release = threading.Event(), threading.Event()
    full_parse = ingest_module.parse_file

    def held_full_parse(*args, **kwargs):  # the full pass (tables, OCR) waits until the test has looked
        reading.set()
        assert release.wait(30)
        return full_parse(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "parse_file", held_full_parse)
    stages: list[str] = []
    progress = IngestProgress(pdf.name, on_change=lambda view: stages.append(view.stage))
    results = []
    worker = threading.Thread(target=lambda: results.append(
        Ingestor(store, config).ingest_path(pdf, progress=progress)))
    worker.start()
    try:
        assert reading.wait(30)
        [record] = store.documents()
        assert record.status == "preliminary" and store.busy(record.doc_id).operation == "ingest"
        assert store.keywords.search(fixtures.EN_FACT, 3)[0].doc_id == record.doc_id
        assert [k.doc_id for k in store.keyword_only()] == [record.doc_id]
        assert progress.view().searchable_after_s is not None
    finally:
        release.set()
        worker.join(60)
    [result] = results
    assert result.status == "completed" and store.document(result.doc_id).status == "completed"
    first_keywords = stages.index("keywords")
    assert stages.index("parse") < first_keywords < stages.index("tables") < len(stages) - 1 - stages[::-1].index(
        "keywords") < stages.index("embedding")


def test_a_pdf_killed_between_the_passes_is_purged_like_any_interrupted_ingest(
        store: DocumentStore, config: RagConfig, fake_router, tmp_path: Path) -> None:
    from tests.children import start_child

    pdf = fixtures.make_english_pdf(tmp_path, pages=MIN_PAGES)
    child = start_child(config, f"""
        from rag.ingest import ingestor as ingest_module
        def read_forever(*args, **kwargs):
            print("reading tables", flush=True)
            time.sleep(600)
        ingest_module.parse_file = read_forever
        Ingestor(store, config).ingest_path({str(pdf)!r})
    """)
    try:
        child.wait_for("reading tables")
        [record] = store.documents()
        assert record.status == "preliminary"
    finally:
        child.kill()
    store.recover()
    [record] = store.documents()
    assert record.status == "failed" and "interrupted" in record.error
    assert store.keywords.search(fixtures.EN_FACT, 3) == [] and store.keyword_only() == []
    assert Ingestor(store, config).ingest_path(pdf).status == "completed"


def test_a_short_pdf_is_read_once(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    stages: list[str] = []
    progress = IngestProgress("a.pdf", on_change=lambda view: stages.append(view.stage))
    Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path, pages=3), progress=progress)
    entered = [stage for i, stage in enumerate(stages) if not i or stages[i - 1] != stage]
    assert entered.count("keywords") == 1 and "preliminary" not in {r.status for r in store.documents()}


@pytest.mark.parametrize("background", [False, True], ids=["now", "background"])
def test_ingesting_a_keyword_only_document_again_resumes_its_vectors(store: DocumentStore, config: RagConfig,
                                                                      tmp_path: Path, background: bool) -> None:
    from rag.ingest.background import BackgroundEmbedder

    pdf = fixtures.make_english_pdf(tmp_path)
    first = Ingestor(store, config, background=Nobody()).ingest_path(pdf)
    assert first.status == "searchable" and store.vectors.count() == 0
    store.registry.release(first.doc_id)  # as when the process that was embedding it is gone
    embedder = BackgroundEmbedder(store, resume=False) if background else None
    try:
        again = Ingestor(store, config, background=embedder).ingest_path(pdf)
        if embedder is not None:
            assert again.status == "searchable" and not again.error
            embedder.wait(first.doc_id, timeout=30)
        else:
            assert again.status == "completed", again.error
    finally:
        if embedder is not None:
            embedder.close()
    assert again.doc_id == first.doc_id and store.document(first.doc_id).status == "completed"
    assert store.vectors.count("hash-minilm") == first.chunks and store.vectors.count("hash-e5-small") == first.chunks

"""Findings of issue #14 (storage): each test failed on the code before the fix.

A second store on the same folder must leave a running ingest alone; a delete killed midway is
finished when the library opens again; a failed re-index keeps the stored original; an orphan folder
is cleaned at start; uploads queued when the app died are reported; the data folder is private.
"""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.ingest.parse import ParseError
from rag.models.embedding_router import EmbedderRouter
from tests import fixtures
from tests.children import run_child, start_child
from tests.fakes import HashEmbedding

_EMBEDDING = threading.Event()
_RELEASE = threading.Event()


class BlockingEmbedding(HashEmbedding):
    """Embeds like ``HashEmbedding`` once the test releases it, so an ingest can be held mid-way."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        _EMBEDDING.set()
        assert _RELEASE.wait(60), "the test never released the embedder"
        return super()._get_text_embeddings(texts)


def test_a_second_store_leaves_a_running_ingest_alone(config: RagConfig, fake_router: EmbedderRouter,
                                                      tmp_path: Path) -> None:
    """A session that changes an embedding setting (or `rag docs`) opens another store mid-ingest."""
    _EMBEDDING.clear()
    _RELEASE.clear()
    blocking = EmbedderRouter(config.embedding,
                              lambda spec: BlockingEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))
    first = DocumentStore(config, blocking)
    results = []
    worker = threading.Thread(
        target=lambda: results.append(Ingestor(first, config).ingest_path(fixtures.make_english_pdf(tmp_path))))
    worker.start()
    try:
        assert _EMBEDDING.wait(60)
        second = DocumentStore(config, fake_router)
        [row] = second.documents()
        # held while its vectors are stored: keyword-searchable, claimed by this (live) process
        assert row.status == "embedding", row.error
        assert second.busy(row.doc_id).operation == "embed"
    finally:
        _RELEASE.set()
        worker.join(60)
    [result] = results
    assert result.ok, result.error
    for store in (first, second):
        record = store.document(result.doc_id)
        assert record.status == "completed" and record.chunks == result.chunks
        assert len(store.keywords) == result.chunks
        assert store.vectors.count("hash-minilm") == result.chunks
        assert store.vectors.count("hash-e5-small") == result.chunks
        assert store.keywords.search("maximum daily dose of ibuprofen", k=3)[0].doc_id == result.doc_id
    second.close()
    first.close()


def test_recovery_waits_for_the_owner_of_an_ingest_to_be_gone(config: RagConfig, fake_router: EmbedderRouter,
                                                              tmp_path: Path) -> None:
    """`rag docs` while another process ingests must not purge it; once that process is killed, it is."""
    pdf = fixtures.make_english_pdf(tmp_path)
    child = start_child(config, f"""
        from rag.ingest import ingestor as ingest_module
        def embed_forever(*args, **kwargs):
            print("embedding", flush=True)
            time.sleep(600)
        ingest_module.parse_file = embed_forever  # held while it computes: still processing
        Ingestor(store, config).ingest_path({str(pdf)!r})
    """)
    try:
        child.wait_for("embedding")
        reader = DocumentStore(config, fake_router)
        [row] = reader.documents()
        assert row.status == "processing", row.error
    finally:
        child.kill()
    reader.recover()
    [row] = reader.documents()
    assert row.status == "failed" and "interrupted" in row.error
    again = Ingestor(reader, config).ingest_path(pdf)
    assert again.ok and reader.document(again.doc_id).status == "completed"
    reader.close()


def test_a_delete_killed_midway_is_finished_when_the_library_opens_again(
        store: DocumentStore, config: RagConfig, fake_router: EmbedderRouter, tmp_path: Path) -> None:
    ingestor = Ingestor(store, config)
    keep = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path))
    gone = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    completed = run_child(config, f"""
        from rag.index.keywords import KeywordIndex
        original = KeywordIndex.delete
        def delete_then_die(self, doc_id):
            original(self, doc_id)
            die()
        KeywordIndex.delete = delete_then_die
        store.delete({gone.doc_id!r})
    """)
    assert completed.returncode == -9, completed.stderr

    reopened = DocumentStore(config, fake_router)
    assert [r.doc_id for r in reopened.documents()] == [keep.doc_id]
    assert reopened.vectors.count() == keep.chunks and len(reopened.keywords) == keep.chunks
    assert not reopened.document_dir(gone.doc_id).exists()
    assert reopened.keywords.search("maximum daily dose of ibuprofen", k=3) == []
    assert reopened.keywords.search("布洛芬", k=3)[0].doc_id == keep.doc_id
    reopened.close()


def test_a_delete_killed_before_its_bm25_index_is_switched_in_leaves_nothing_searchable(
        store: DocumentStore, config: RagConfig, fake_router: EmbedderRouter, tmp_path: Path) -> None:
    """Found by the state machine: the token rows were deleted, the saved matrices still held them."""
    ingestor = Ingestor(store, config)
    keep = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path))
    gone = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    completed = run_child(config, f"""
        from rag.index import failpoints
        failpoints.arm("bm25.renamed")
        store.delete({gone.doc_id!r})
    """)
    assert completed.returncode == -9, completed.stderr
    store.recover()
    assert [r.doc_id for r in store.documents()] == [keep.doc_id]
    assert store.keywords.doc_ids() == {keep.doc_id}
    assert store.keywords.search("maximum daily dose of ibuprofen", k=3) == []
    reopened = DocumentStore(config, fake_router)
    assert reopened.keywords.doc_ids() == {keep.doc_id}
    reopened.close()


def test_a_failed_reindex_keeps_the_stored_original_and_its_index(store: DocumentStore, config: RagConfig,
                                                                  tmp_path: Path, monkeypatch) -> None:
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    stored = store.stored_file(result.doc_id)
    original = stored.read_bytes()

    def broken_parser(*args, **kwargs):
        raise ParseError("report.pdf: simulated parser failure")

    monkeypatch.setattr("rag.ingest.ingestor.parse_file", broken_parser)
    again = Ingestor(store, config).reindex(result.doc_id)
    assert again.status == "failed" and "simulated parser failure" in again.error
    assert stored.read_bytes() == original
    record = store.document(result.doc_id)
    assert record.status == "completed" and record.chunks == result.chunks
    assert store.keywords.search("maximum daily dose of ibuprofen", k=3)[0].doc_id == result.doc_id
    assert store.vectors.count("hash-minilm") == result.chunks and store.vectors.count("hash-e5-small") == result.chunks


def test_an_orphan_folder_is_removed_when_the_library_opens(config: RagConfig, fake_router: EmbedderRouter,
                                                            tmp_path: Path) -> None:
    """What a kill between storing the file and writing its registry row used to leave behind."""
    first = DocumentStore(config, fake_router)
    kept = Ingestor(first, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    first.close()
    orphan = config.data_path / "files" / "0123456789abcdef"
    orphan.mkdir(parents=True)
    (orphan / "lost.pdf").write_bytes(b"%PDF-1.4 half an upload")

    reopened = DocumentStore(config, fake_router)
    assert not orphan.exists()
    assert reopened.stored_file(kept.doc_id).exists() and reopened.document(kept.doc_id).status == "completed"
    reopened.close()


def test_uploads_queued_when_the_app_died_are_reported_after_restart(config: RagConfig, fake_router: EmbedderRouter,
                                                                     tmp_path: Path) -> None:
    names = []
    for number in range(3):
        path = tmp_path / f"note{number}.txt"
        path.write_text(f"Note number {number} says the meeting moved to room {100 + number}.\n", encoding="utf-8")
        names.append(path)
    child = start_child(config, f"""
        from rag.ingest import ingestor as ingest_module
        from rag.ingest.queue import IngestQueue
        def parse_forever(*args, **kwargs):
            print("parsing", flush=True)
            time.sleep(600)
        ingest_module.parse_file = parse_forever
        queue = IngestQueue(store)
        for path in {[str(p) for p in names]!r}:
            queue.submit(open(path, "rb").read(), os.path.basename(path), config)
        print("all queued", flush=True)
        time.sleep(600)
    """)
    try:  # the first parse may start before the last upload is queued: wait for both
        child.wait_for("parsing")
        child.wait_for("all queued")
    finally:
        child.kill()

    from rag.ingest.queue import IngestQueue

    restarted = DocumentStore(config, fake_router)
    jobs = {job.file_name: job for job in IngestQueue(restarted).jobs()}
    assert set(jobs) == {p.name for p in names}
    for job in jobs.values():
        assert job.state == "done" and job.result is not None and job.result.status == "failed"
        assert "upload it again" in job.result.error
    restarted.close()


def test_the_data_folder_is_created_private_to_the_user(config: RagConfig, fake_router: EmbedderRouter) -> None:
    store = DocumentStore(config, fake_router)
    assert stat.S_IMODE(config.data_path.stat().st_mode) == 0o700
    store.close()


@pytest.fixture(autouse=True)
def _release_blocked_embedders():
    yield
    _RELEASE.set()


def test_a_file_name_at_the_length_limit_is_stored(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    """Temporary names add a suffix to the stored file's name; a 255-character name must still fit."""
    name = "n" * 251 + ".txt"
    result = Ingestor(store, config).ingest_bytes(b"A note about the quarterly turbine audit.\n", name)
    assert result.ok, result.error
    assert store.stored_file(result.doc_id).name == name


def test_a_file_that_cannot_be_stored_leaves_no_row_behind(store: DocumentStore, config: RagConfig,
                                                           monkeypatch) -> None:
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("rag.index.store.write_atomic", disk_full)
    result = Ingestor(store, config).ingest_bytes(b"A note about the quarterly turbine audit.\n", "audit.txt")
    assert result.status == "failed" and "No space left on device" in result.error
    assert store.documents() == [] and store.registry.claims() == []

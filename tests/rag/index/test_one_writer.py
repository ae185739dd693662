"""One writer per library folder: the lock, who owns a write, and what readers see meanwhile."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.index.folder_lock import LibraryBusyError, folder_lock
from rag.index.ownership import Owner, current, start_stamp
from rag.index.store import DocumentBusyError, DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.models.embedding_router import EmbedderRouter
from tests import fixtures
from tests.children import run_child, start_child


def _vector_hits(store: DocumentStore, text: str) -> set[str]:
    """Documents of the top vector hits for ``text`` in every embedding space."""
    found = set()
    for model_id in store.vectors.model_ids():
        embedder = store.router.for_model_id(model_id)
        found |= {h.metadata["doc_id"] for h in store.vectors.query(model_id, embedder.get_query_embedding(text), 5)}
    return found


def test_a_writer_that_waits_too_long_is_told_which_process_holds_the_lock(
        config: RagConfig, fake_router: EmbedderRouter, tmp_path: Path) -> None:
    child = start_child(config, """
        with store.writing("ingesting big.pdf"):
            print("holding", flush=True)
            time.sleep(600)
    """)
    try:
        child.wait_for("holding")
        store = DocumentStore(config, fake_router, lock_timeout_s=0.3)  # opening never waits
        notices: list[str] = []
        store.on_wait = notices.append
        with pytest.raises(LibraryBusyError) as caught:
            store.delete("0123456789abcdef")
        message = str(caught.value)
        assert f"process {child.pid}" in message and "ingesting big.pdf" in message and "busy" in message
        assert len(notices) == 1 and f"process {child.pid}" in notices[0]

        result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path))
        assert result.status == "failed" and result.busy and f"process {child.pid}" in result.error
        assert store.documents() == []  # nothing stored
    finally:
        child.kill()
    with pytest.raises(KeyError):  # the kernel freed the dead holder's lock at once
        store.delete("0123456789abcdef")
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    store.close()


def test_threads_of_one_process_take_turns_and_the_lock_is_reentrant(tmp_path: Path) -> None:
    lock = folder_lock(tmp_path)
    assert folder_lock(tmp_path / ".") is lock  # one per folder per process
    entered = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with lock.hold("indexing a.pdf", timeout=1):
            with lock.hold("writing vectors", timeout=1):  # nested: no self-deadlock
                entered.set()
                release.wait(10)

    worker = threading.Thread(target=hold)
    worker.start()
    assert entered.wait(10)
    with pytest.raises(LibraryBusyError, match="this process .* is indexing a.pdf"):
        with lock.hold("deleting", timeout=0.2):
            pass
    assert lock.holder()["operation"] == "indexing a.pdf"
    release.set()
    worker.join(10)
    with lock.hold("deleting", timeout=1):
        assert lock.depth == 1 and lock.holder()["pid"] == current().pid
    assert lock.holder() is None and lock.depth == 0


def test_an_owner_is_alive_only_while_a_process_with_its_pid_and_start_time_runs() -> None:
    me = current()
    assert me.alive() and me.started
    assert not Owner(me.pid, me.started + "1").alive()  # the same pid, started at another time: reused
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    owner = Owner(child.pid, start_stamp(child.pid) or "")
    assert owner.alive()
    child.kill()
    deadline = time.monotonic() + 10
    while owner.alive() and time.monotonic() < deadline:  # a zombie (not yet reaped) counts as dead
        time.sleep(0.02)
    assert not owner.alive()
    child.wait()


def test_a_reader_in_this_process_sees_another_processes_writes_without_reopening(
        config: RagConfig, fake_router: EmbedderRouter, tmp_path: Path) -> None:
    reader = DocumentStore(config, fake_router)
    keep = Ingestor(reader, config).ingest_path(fixtures.make_chinese_pdf(tmp_path))
    assert reader.keywords.search("ibuprofen", k=5) == []
    version = reader.version
    pdf = fixtures.make_english_pdf(tmp_path)
    done = run_child(config, f"print(Ingestor(store, config).ingest_path({str(pdf)!r}).doc_id)")
    assert done.returncode == 0, done.stderr
    doc_id = done.stdout.strip().splitlines()[-1]

    assert reader.version != version
    assert reader.document(doc_id).status == "completed"
    assert reader.keywords.search("maximum daily dose of ibuprofen", k=3)[0].doc_id == doc_id
    assert doc_id in _vector_hits(reader, fixtures.EN_FACT)
    # the English document's vectors, in both English models' spaces (the MiniLM one is new to the reader),
    # beside the Chinese one's in e5-small's
    english = reader.document(doc_id).chunks
    assert reader.vectors.count("hash-minilm") == english
    assert reader.vectors.count("hash-e5-small") == keep.chunks + english

    done = run_child(config, f"store.delete({doc_id!r})")
    assert done.returncode == 0, done.stderr
    assert reader.keywords.search("maximum daily dose of ibuprofen", k=3) == []
    assert doc_id not in _vector_hits(reader, fixtures.EN_FACT)
    assert reader.vectors.count("hash-minilm") == 0 and reader.vectors.count() == keep.chunks
    reader.close()


def test_retrieval_skips_documents_that_are_not_completed(store: DocumentStore, config: RagConfig,
                                                          tmp_path: Path) -> None:
    """The moments between write steps (or a crash before recovery) never show a half-written document."""
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert store.keywords.search(fixtures.EN_FACT, k=3) and result.doc_id in _vector_hits(store, fixtures.EN_FACT)
    for status in ("processing", "deleting", "failed"):
        store.registry.update(result.doc_id, status=status)
        assert store.keywords.search(fixtures.EN_FACT, k=3) == []
        assert result.doc_id not in _vector_hits(store, fixtures.EN_FACT)
    store.registry.update(result.doc_id, status="completed")
    assert store.keywords.search(fixtures.EN_FACT, k=3)[0].doc_id == result.doc_id


def test_a_document_being_ingested_elsewhere_is_neither_deleted_nor_ingested_twice(
        config: RagConfig, fake_router: EmbedderRouter, tmp_path: Path) -> None:
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
        store = DocumentStore(config, fake_router)
        [row] = store.documents()
        with pytest.raises(DocumentBusyError, match=f"being ingested by process {child.pid}"):
            store.delete(row.doc_id)
        again = Ingestor(store, config).ingest_path(pdf)
        assert again.status == "duplicate" and f"process {child.pid}" in again.error
        reindexed = Ingestor(store, config).reindex(row.doc_id)
        assert reindexed.status == "failed" and reindexed.busy
        assert store.document(row.doc_id).status == "processing"
    finally:
        child.kill()
    store.close()


def test_two_stores_in_one_process_see_each_others_vectors(config: RagConfig, fake_router: EmbedderRouter,
                                                           tmp_path: Path) -> None:
    """A session with other settings opens a second store on the folder; both share one Chroma client."""
    first = DocumentStore(config, fake_router)
    second = DocumentStore(config, fake_router)
    assert first.vectors.count() == 0 and second.vectors.count() == 0  # both have looked (and cached)
    result = Ingestor(second, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert first.vectors.count("hash-minilm") == result.chunks and first.vectors.count("hash-e5-small") == result.chunks
    assert result.doc_id in _vector_hits(first, fixtures.EN_FACT)
    Ingestor(first, config).ingest_path(fixtures.make_chinese_pdf(tmp_path))
    assert len(second.vectors.model_ids()) == 2
    second.close()
    assert result.doc_id in _vector_hits(first, fixtures.EN_FACT)  # closing one leaves the other working
    first.close()

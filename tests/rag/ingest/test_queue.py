"""The shared ingest worker: jobs belong to the session that submitted them, and the bytes waiting in
memory are capped without touching what is already queued."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import rag.ingest.queue
from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import IngestResult
from rag.ingest.queue import IngestQueue, QueueFullError
from tests import fixtures


@pytest.fixture
def gate(monkeypatch) -> threading.Event:
    """Files wait in the worker until the event is set."""
    release = threading.Event()

    class Held:
        def __init__(self, store, config) -> None:
            pass

        def ingest_bytes(self, data: bytes, file_name: str, progress=None) -> IngestResult:
            release.wait(timeout=30)
            return IngestResult(file_name, "completed", pages=1, chunks=1, language="en")

    monkeypatch.setattr(rag.ingest.queue, "Ingestor", Held)
    yield release
    release.set()


def test_jobs_are_listed_and_cleared_per_owner(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    queue = IngestQueue(store)
    pdf = fixtures.make_english_pdf(tmp_path).read_bytes()
    queue.submit(pdf, "a.pdf", config, owner="alice")
    queue.submit(fixtures.make_markdown(tmp_path).read_bytes(), "b.md", config, owner="bob")
    queue.wait(timeout=120)
    assert [j.file_name for j in queue.jobs("alice")] == ["a.pdf"]
    assert [j.file_name for j in queue.jobs("bob")] == ["b.md"]
    assert [j.file_name for j in queue.jobs()] == ["a.pdf", "b.md"]
    queue.forget_finished("alice")
    assert queue.jobs("alice") == [] and [j.file_name for j in queue.jobs()] == ["b.md"]
    assert store.documents()[0].status == "completed"  # clearing the list never touches the library


def test_queued_bytes_are_capped(store: DocumentStore, config: RagConfig, gate: threading.Event) -> None:
    queue = IngestQueue(store, max_queued_bytes=2500)
    queue.submit(b"x" * 1000, "a.pdf", config, owner="alice")
    queue.submit(b"x" * 1000, "b.pdf", config, owner="bob")
    assert queue.queued_bytes() == 2000
    with pytest.raises(QueueFullError, match=r"c\.pdf \(1 KB\) was not queued: 2 KB of uploads are already waiting "
                                             r"to be indexed and the limit is 2 KB"):
        queue.submit(b"x" * 1000, "c.pdf", config, owner="alice")
    assert [j.file_name for j in queue.jobs()] == ["a.pdf", "b.pdf"]
    queue.submit(b"x" * 500, "d.pdf", config, owner="alice")  # still fits
    gate.set()
    queue.wait(timeout=30)
    assert queue.queued_bytes() == 0
    queue.submit(b"x" * 1000, "c.pdf", config, owner="alice")  # room again
    queue.wait(timeout=30)
    assert all(j.result and j.result.ok for j in queue.jobs())

"""The Documents page with two browser sessions on one server (two AppTests sharing the cached ingest
worker): each lists and clears only its own uploads; queued upload bytes are capped with a message;
a page too large to preview says so instead of rendering gigapixels."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import pymupdf
import pytest
from streamlit.testing.v1 import AppTest

import rag.ingest.queue
from rag.ingest.ingestor import IngestResult
from tests import fixtures
from tests.app.conftest import ingest, open_app
from tests.markdown_check import shown_text


def _queue():
    from ui.resources import base_config, get_ingest_queue

    return get_ingest_queue(base_config())


def _upload(app: AppTest, *files: tuple[str, bytes]) -> AppTest:
    app.file_uploader[0].set_value([(name, data, "application/pdf") for name, data in files])
    app.button[0].click().run()  # the form's submit button
    assert not app.exception, app.exception
    return app


def _job_lines(app: AppTest) -> list[str]:
    return [shown_text(e.value) for kind in ("success", "info", "error") for e in getattr(app, kind)]


def test_each_session_lists_and_clears_only_its_own_jobs(app_data: Path, tmp_path: Path) -> None:
    first = fixtures.make_english_pdf(tmp_path, "first.pdf")
    second = fixtures.make_markdown(tmp_path, "second.md")
    alice, bob = open_app("pages/documents.py"), open_app("pages/documents.py")
    alice.run()
    bob.run()
    _upload(alice, (first.name, first.read_bytes()))
    _queue().wait(timeout=120)
    alice.run()
    bob.run()
    assert any(line.startswith("first.pdf: 3 pages") for line in _job_lines(alice))
    assert not any("first.pdf" in line for line in _job_lines(bob))
    assert not [b for b in bob.button if b.label == "Clear finished"]
    assert len(bob.dataframe[0].value) == 1  # the library itself is shared

    _upload(bob, (second.name, second.read_bytes()))
    _queue().wait(timeout=120)
    bob.run()
    assert [line.split(":")[0] for line in _job_lines(bob)] == ["second.md"]

    next(b for b in alice.button if b.label == "Clear finished").click().run()
    assert not alice.exception
    assert not [s for s in alice.subheader if s.value == "Indexing"]
    bob.run()
    assert [line.split(":")[0] for line in _job_lines(bob)] == ["second.md"]  # alice's clear left bob's job


@pytest.fixture
def stalled_worker(monkeypatch) -> Iterator[threading.Event]:
    """The ingest worker holds each file until the returned event is set (so files stay queued)."""
    release = threading.Event()

    class Stalled:
        def __init__(self, store, config) -> None:
            pass

        def ingest_bytes(self, data: bytes, file_name: str, progress=None) -> IngestResult:
            release.wait(timeout=60)
            return IngestResult(file_name, "completed", pages=1, chunks=1, language="en")

    monkeypatch.setattr(rag.ingest.queue, "Ingestor", Stalled)
    yield release
    release.set()


def test_queued_upload_bytes_are_capped_with_a_clear_message(app_data: Path, tmp_path: Path,
                                                             stalled_worker: threading.Event) -> None:
    data = fixtures.make_english_pdf(tmp_path).read_bytes()
    app = open_app("pages/documents.py")
    app.run()
    _queue().max_queued_bytes = int(len(data) * 2.5)
    _upload(app, ("a.pdf", data), ("b.pdf", data), ("c.pdf", data))
    errors = [shown_text(e.value) for e in app.error]
    assert len(errors) == 1 and errors[0].startswith(f"c.pdf ({len(data) / 1024:.0f} KB) was not queued:"), errors
    assert "already waiting to be indexed and the limit is" in errors[0]
    assert any(t.value == "Queued 2 file(s) for indexing" for t in app.toast)
    assert [job.file_name for job in _queue().jobs()] == ["a.pdf", "b.pdf"]  # nothing queued was dropped

    stalled_worker.set()
    _queue().wait(timeout=60)
    _upload(app, ("c.pdf", data))  # room again once the others are done
    assert not app.error


def test_a_page_too_large_to_preview_says_so(app_data: Path, tmp_path: Path, monkeypatch) -> None:
    document = pymupdf.open()
    page = document.new_page(width=14400, height=14400)  # 200 x 200 inches, the PDF maximum
    page.insert_text((72, 72), "A very large poster about ibuprofen doses.", fontsize=11)
    path = tmp_path / "poster.pdf"
    document.save(path)
    ingest(path)

    def no_gigapixels(page, *args, dpi=None, **kwargs):
        raise AssertionError(f"asked to render a {page.rect.width:g} pt page at {dpi} dpi")

    monkeypatch.setattr(pymupdf.Page, "get_pixmap", no_gigapixels)
    app = open_app("pages/documents.py")
    app.run()
    assert not app.exception, app.exception
    assert not app.image
    assert any("Page 1 could not be previewed: page 1 is 200 × 200 inches" in shown_text(w.value)
               for w in app.warning)

"""Progress from real counters: stage, n of N, rate and time left; parsers report pages; the CLI prints it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rag.cli.progress_lines import ProgressPrinter
from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.ingest.progress import IngestProgress, format_seconds, page_done, tracking
from tests import fixtures


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_time_left_come_from_the_counters() -> None:
    clock = Clock()
    progress = IngestProgress("report.pdf", clock=clock)
    progress.stage("parse", total=180)
    clock.now += 2.0
    progress.advance(60)  # 60 pages in 2 s
    view = progress.view()
    assert (view.stage, view.done, view.total, view.unit) == ("parse", 60, 180, "pages")
    assert view.rate == pytest.approx(30.0) and view.eta_s == pytest.approx(4.0)
    assert view.text() == "parse 60/180 pages · 30.0 pages/s · about 4 s left"


def test_a_stage_without_counts_shows_no_rate_and_no_guess() -> None:
    clock = Clock()
    progress = IngestProgress("a.pdf", clock=clock)
    progress.stage("chunk")
    clock.now += 1.0
    view = progress.view()
    assert view.rate is None and view.eta_s is None and view.fraction == 0.0
    assert view.text() == "chunk"


def test_embedding_counts_vectors_and_a_resumed_document_starts_where_it_stopped() -> None:
    clock = Clock()
    progress = IngestProgress("a.pdf", clock=clock)
    progress.searchable()
    progress.stage("embedding", total=600, done=200)  # 200 vectors already stored before a restart
    clock.now += 10.0
    progress.advance(300)
    view = progress.view()
    assert view.rate == pytest.approx(10.0)  # vectors stored now, not the 200 found stored
    assert view.eta_s == pytest.approx(30.0) and view.fraction == pytest.approx(0.5)
    assert "embedding 300/600 vectors · 10.0 vectors/s · about 30 s left" in view.text()
    assert view.searchable_after_s == 0.0


def test_the_rate_follows_the_last_window_so_a_pause_shows() -> None:
    clock = Clock()
    progress = IngestProgress("a.pdf", clock=clock)
    progress.stage("embedding", total=1000)
    for _ in range(30):  # 10 chunks/s for 30 s
        clock.now += 1.0
        progress.advance(progress.view().done + 10)
    assert progress.view().rate == pytest.approx(10.0)
    clock.now += 30.0  # a long question: nothing embedded for 30 s
    progress.advance(progress.view().done + 10)
    assert progress.view().rate < 2.0


def test_finish_and_failure() -> None:
    progress = IngestProgress("a.pdf")
    progress.finish()
    assert progress.view().stage == "done" and progress.view().fraction == 1.0
    failed = IngestProgress("b.pdf")
    failed.finish(error="broken")
    assert failed.view().stage == "failed" and failed.error == "broken"
    with pytest.raises(ValueError):
        failed.stage("guessing")


def test_parsers_report_pages_only_inside_tracking() -> None:
    progress = IngestProgress("a.pdf")
    page_done("parse", 1, 3)  # nobody tracking: ignored
    with tracking(progress):
        page_done("parse", 1, 3)
        page_done("parse", 2, 3)
    page_done("parse", 3, 3)
    view = progress.view()
    assert (view.stage, view.done, view.total) == ("parse", 2, 3)


def test_an_ingest_reports_every_page_and_every_chunk(store: DocumentStore, config: RagConfig,
                                                      tmp_path: Path) -> None:
    seen = []
    progress = IngestProgress("report.pdf", on_change=seen.append)
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path, pages=3), progress=progress)
    assert result.ok, result.error
    # pages are read with table detection (ingest.tables is on by default), so the stage is "tables"
    parse = [(v.done, v.total) for v in seen if v.stage == "tables" and v.total]
    assert parse[-1] == (3, 3) and [d for d, _ in parse] == sorted(d for d, _ in parse)
    embedding = [(v.done, v.total) for v in seen if v.stage == "embedding"]
    vectors = 2 * result.chunks  # an English chunk: the English model's vector and the second model's
    assert embedding[0] == (0, vectors) and embedding[-1] == (vectors, vectors)
    assert [d for d, _ in embedding] == sorted(d for d, _ in embedding)
    stages = [v.stage for v in seen]
    assert stages.index("keywords") < stages.index("embedding") < stages.index("done")
    assert seen[-1].searchable_after_s is not None


def test_the_cli_prints_each_stage_and_throttles_the_rest() -> None:
    clock = Clock()
    out = io.StringIO()
    progress = IngestProgress("report.pdf", clock=clock, on_change=ProgressPrinter(out, clock=clock))
    progress.stage("parse", total=100)
    for done in range(1, 101):
        clock.now += 0.01
        progress.advance(done)
    progress.stage("embedding", total=50)
    clock.now += 6.0
    progress.advance(20)
    progress.finish()
    lines = out.getvalue().splitlines()
    assert [line.split(": ", 1)[1].split(" ")[0] for line in lines] == ["parse", "embedding", "embedding", "done"]
    assert "embedding 20/50 vectors" in lines[2] and "left" in lines[2]


def test_seconds_are_readable() -> None:
    assert [format_seconds(s) for s in (8.4, 125, 3780)] == ["8 s", "2 min 5 s", "1 h 3 min"]

"""Per-document ingest progress from real counters: the stage, n of N, a rate and the time left.

Stages, in order: ``parse`` (pages of the text layer read), ``tables`` (pages read with table
detection), ``ocr`` (pages without a text layer), ``chunk``, ``keywords`` (the BM25 index written: the
document is searchable from here), ``metadata`` (the LLM's summary, when on), ``embedding`` (vectors
stored, n of N: one per chunk and model that embeds its language), then ``done`` or ``failed``. A new document with tables or scans
goes parse → chunk → keywords (searchable from its text layer) → tables / OCR → chunk → keywords. Every figure comes from a
counter the work itself advances — pages parsed, pages OCR'd, vectors stored — never from a guessed
share of the whole: the rate is counted units over the stage's elapsed time (the last ``RATE_WINDOW_S``
seconds once the stage has run that long, so a pause for a question shows), and the time left is the
units left at that rate. A stage that has no counter yet says so instead of showing a number.

Parsers deep inside ``parse_file`` report pages through ``page_done``, which reaches the progress of
the ingest running in the same thread (a context variable set by ``tracking``), so no parser signature
carries a callback.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

STAGES = ("queued", "parse", "tables", "ocr", "chunk", "keywords", "metadata", "embedding", "done", "failed")
STAGE_LABELS = {"queued": "queued", "parse": "parse", "tables": "tables", "ocr": "OCR", "chunk": "chunk",
                "keywords": "keyword index", "metadata": "metadata", "embedding": "embedding", "done": "done",
                "failed": "failed"}
# embedding counts vectors, not chunks: an English chunk has one per English model (two by default)
UNITS = {"parse": "pages", "tables": "pages", "ocr": "pages", "embedding": "vectors"}
RATE_WINDOW_S = 20.0

_current: contextvars.ContextVar[IngestProgress | None] = contextvars.ContextVar("ingest_progress", default=None)


@dataclass(frozen=True)
class ProgressView:
    """What to show for one document at one moment (plain data; the UI escapes ``file_name``)."""

    file_name: str
    stage: str
    done: int
    total: int
    unit: str  # pages, vectors, or "" for a stage without a counter
    rate: float | None  # units per second
    eta_s: float | None  # seconds left in this stage at that rate
    elapsed_s: float
    searchable_after_s: float | None  # seconds from the start until keyword search found it
    detail: str = ""  # e.g. "tables" while pages are parsed with table detection

    @property
    def fraction(self) -> float:
        if self.stage == "done":
            return 1.0
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        """"embedding 120/613 vectors · 9.8 vectors/s · about 50 s left"."""
        label = STAGE_LABELS.get(self.stage, self.stage) + (f" ({self.detail})" if self.detail else "")
        parts = [label]
        if self.total:
            parts[0] += f" {self.done}/{self.total} {self.unit}".rstrip()
        if self.rate is not None:
            parts.append(f"{self.rate:.1f} {self.unit}/s")
        if self.eta_s is not None and self.stage not in ("done", "failed"):
            parts.append(f"about {format_seconds(self.eta_s)} left")
        if self.searchable_after_s is not None and self.stage not in ("done", "failed"):
            parts.append(f"keyword-searchable after {self.searchable_after_s:.1f} s")
        return " · ".join(parts)


class IngestProgress:
    """Counters of one document's ingest, advanced by the ingest thread and the background embedder.

    Args:
        file_name: The document's name (shown, escaped, by the UI).
        clock: Monotonic seconds. Defaults to ``time.monotonic``.
        on_change: Called with the new view after every change (the CLI prints it). Defaults to none.
    """

    def __init__(self, file_name: str, *, clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[ProgressView], None] | None = None) -> None:
        self.file_name = file_name
        self.doc_id = ""
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self._started = clock()
        self._stage = "queued"
        self._detail = ""
        self._done = self._total = 0
        self._stage_started = self._started
        self._samples: deque[tuple[float, int]] = deque([(self._started, 0)])  # (time, done), last RATE_WINDOW_S
        self._searchable_at: float | None = None
        self.stage_seconds: dict[str, float] = {}
        self.error = ""

    def stage(self, name: str, *, total: int = 0, done: int = 0, detail: str = "") -> None:
        """Enter stage ``name`` with ``done`` of ``total`` units already done (a resumed embedding)."""
        if name not in STAGES:
            raise ValueError(f"unknown ingest stage {name!r}")
        with self._lock:
            now = self._clock()
            self.stage_seconds[self._stage] = self.stage_seconds.get(self._stage, 0.0) + now - self._stage_started
            self._stage, self._detail, self._total, self._done = name, detail, total, done
            self._stage_started = now
            self._samples = deque([(now, done)])
            if name == "embedding" and self._searchable_at is None:
                self._searchable_at = now
        self._changed()

    def advance(self, done: int, *, total: int | None = None) -> None:
        """The current stage has ``done`` units done (of ``total``, when it became known only now)."""
        with self._lock:
            now = self._clock()
            self._done = done
            if total is not None:
                self._total = total
            self._samples.append((now, done))
            while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW_S:
                self._samples.popleft()
        self._changed()

    def searchable(self) -> None:
        """The keyword index holds the document now (it is found by keyword search from here)."""
        with self._lock:
            if self._searchable_at is None:  # the first time counts (a text-layer pass, then the full one)
                self._searchable_at = self._clock()
        self._changed()

    def finish(self, *, error: str = "") -> None:
        self.error = error
        self.stage("failed" if error else "done")

    def view(self) -> ProgressView:
        with self._lock:
            now = self._clock()
            rate = eta = None
            unit = UNITS.get(self._stage, "")
            first_time, first_done = self._samples[0]
            if unit and self._done > first_done and now > first_time:
                rate = (self._done - first_done) / (now - first_time)
                eta = max(0, self._total - self._done) / rate if self._total else None
            searchable = None if self._searchable_at is None else self._searchable_at - self._started
            return ProgressView(self.file_name, self._stage, self._done, self._total, unit, rate, eta,
                                now - self._started, searchable, self._detail)

    @property
    def current_stage(self) -> str:
        return self._stage

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self.view())


@contextmanager
def tracking(progress: IngestProgress | None) -> Iterator[None]:
    """Let parsers called inside the block report pages to ``progress`` (this thread only)."""
    token = _current.set(progress)
    try:
        yield
    finally:
        _current.reset(token)


def page_done(stage: str, done: int, total: int, *, detail: str = "") -> None:
    """A parser finished ``done`` of ``total`` pages of ``stage`` (``parse``, ``tables`` or ``ocr``); a no-op
    outside ``tracking``."""
    progress = _current.get()
    if progress is None:
        return
    if progress.current_stage != stage:
        progress.stage(stage, total=total, detail=detail)
    progress.advance(done, total=total)


def format_seconds(seconds: float) -> str:
    """"8 s", "2 min 5 s", "1 h 3 min"."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"

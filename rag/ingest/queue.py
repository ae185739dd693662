"""A background ingest worker, so that a long ingest (Chinese text embeds at ~6 chunks/s) never
blocks the app: pages submit files and poll job progress.

One worker serves every browser session of a server, so each job remembers the session (``owner``)
that submitted it: a session lists and clears only its own jobs. Files wait in memory until the
worker reaches them, so the bytes waiting are capped (``max_queued_bytes``); a file that would pass
the cap is refused with a message saying so, and nothing already queued is touched.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field

from rag.config import RagConfig
from rag.ingest.ingestor import IngestResult, Ingestor
from rag.index.store import DocumentStore

logger = logging.getLogger(__name__)


DEFAULT_MAX_QUEUED_BYTES = 256 * 1024 * 1024


class QueueFullError(ValueError):
    """A file was refused because the files already waiting plus this one would pass the cap."""


@dataclass
class IngestJob:
    job_id: int
    file_name: str
    owner: str = ""  # the submitting session; "" for the CLI and tests
    size: int = 0  # bytes held in memory until the job is done
    state: str = "queued"  # queued, running, done
    stage: str = ""
    fraction: float = 0.0
    message: str = "waiting"
    result: IngestResult | None = None
    submitted_at: float = field(default_factory=time.time)


class IngestQueue:
    def __init__(self, store: DocumentStore, *, max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES) -> None:
        """Start the worker thread.

        Args:
            store: Where documents are indexed.
            max_queued_bytes: Cap on the bytes of files submitted and not yet done (waiting or running).
        """
        self._store = store
        self.max_queued_bytes = max_queued_bytes
        self._jobs: dict[int, IngestJob] = {}
        self._pending: queue.Queue[tuple[IngestJob, bytes, RagConfig]] = queue.Queue()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._worker = threading.Thread(target=self._run, name="citewise-ingest", daemon=True)
        self._worker.start()

    def submit(self, data: bytes, file_name: str, config: RagConfig, *, owner: str = "") -> IngestJob:
        """Queue one file for ingest on behalf of session ``owner``.

        Raises:
            QueueFullError: The bytes already waiting plus ``data`` would pass ``max_queued_bytes``.
        """
        with self._lock:
            waiting = self._waiting_bytes()
            if waiting + len(data) > self.max_queued_bytes:
                raise QueueFullError(
                    f"{file_name} ({_size(len(data))}) was not queued: {_size(waiting)} of uploads are already waiting "
                    f"to be indexed and the limit is {_size(self.max_queued_bytes)}. Upload it again when those "
                    "have been indexed.")
            job = IngestJob(next(self._ids), file_name, owner=owner, size=len(data))
            self._jobs[job.job_id] = job
        self._pending.put((job, data, config))
        return job

    def jobs(self, owner: str | None = None) -> list[IngestJob]:
        """Jobs in submission order: all of them, or only those ``owner`` submitted."""
        with self._lock:
            return sorted((j for j in self._jobs.values() if owner is None or j.owner == owner),
                          key=lambda j: j.job_id)

    def active(self, owner: str | None = None) -> bool:
        return any(job.state != "done" for job in self.jobs(owner))

    def queued_bytes(self) -> int:
        """Bytes of every session's files not yet done."""
        with self._lock:
            return self._waiting_bytes()

    def forget_finished(self, owner: str | None = None) -> None:
        """Drop finished jobs: all of them, or only those ``owner`` submitted."""
        with self._lock:
            self._jobs = {k: j for k, j in self._jobs.items()
                          if j.state != "done" or (owner is not None and j.owner != owner)}

    def _waiting_bytes(self) -> int:
        return sum(j.size for j in self._jobs.values() if j.state != "done")

    def wait(self, timeout: float = 600.0) -> None:
        """Block until every submitted job is done (for the CLI and tests)."""
        deadline = time.monotonic() + timeout
        while self.active():
            if time.monotonic() > deadline:
                raise TimeoutError("ingest jobs still running")
            time.sleep(0.05)

    def _run(self) -> None:
        while True:
            job, data, config = self._pending.get()
            job.state = "running"

            def progress(stage: str, fraction: float, message: str, job: IngestJob = job) -> None:
                job.stage, job.fraction, job.message = stage, fraction, message

            try:
                job.result = Ingestor(self._store, config).ingest_bytes(data, job.file_name, progress=progress)
            except Exception as exc:  # noqa: BLE001 - the worker must survive any one file
                logger.exception("ingest job %s crashed", job.file_name)
                job.result = IngestResult(job.file_name, "failed", error=f"{type(exc).__name__}: {exc}")
            data = b""  # release the upload now, not when the next file arrives
            job.message = job.result.error or job.message
            job.fraction = 1.0
            job.state = "done"


def _size(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB" if size >= 1024 * 1024 else f"{size / 1024:.0f} KB"

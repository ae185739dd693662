"""A background ingest worker, so that a long ingest (Chinese text embeds at ~6 chunks/s) never
blocks the app: pages submit files and poll job progress.

Jobs are also written to the library's job journal (``rag.index.jobs``) until they finish. When the
app's process ends with uploads still queued or half-ingested, the next queue on the library lists
them as failed jobs saying so, so the user knows to upload them again instead of finding them
silently missing.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field

from rag.config import RagConfig
from rag.ingest.ingestor import IngestResult, Ingestor
from rag.index.store import DocumentStore

logger = logging.getLogger(__name__)


@dataclass
class IngestJob:
    job_id: int
    file_name: str
    state: str = "queued"  # queued, running, done
    stage: str = ""
    fraction: float = 0.0
    message: str = "waiting"
    result: IngestResult | None = None
    submitted_at: float = field(default_factory=time.time)
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # its row in the job journal


class IngestQueue:
    def __init__(self, store: DocumentStore) -> None:
        self._store = store
        self._jobs: dict[int, IngestJob] = {}
        self._pending: queue.Queue[tuple[IngestJob, bytes, RagConfig]] = queue.Queue()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        for lost in store.jobs.take_lost():
            job = IngestJob(next(self._ids), lost.file_name, state="done", fraction=1.0, message=lost.message(),
                            result=IngestResult(lost.file_name, "failed", error=lost.message()),
                            submitted_at=lost.submitted_at)
            self._jobs[job.job_id] = job
            logger.warning("upload lost when process %s stopped: %s", lost.owner.pid, lost.file_name)
        self._worker = threading.Thread(target=self._run, name="citewise-ingest", daemon=True)
        self._worker.start()

    def submit(self, data: bytes, file_name: str, config: RagConfig) -> IngestJob:
        job = IngestJob(next(self._ids), file_name)
        self._store.jobs.record(job.key, file_name, len(data))
        with self._lock:
            self._jobs[job.job_id] = job
        self._pending.put((job, data, config))
        return job

    def jobs(self) -> list[IngestJob]:
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: j.job_id)

    def active(self) -> bool:
        return any(job.state != "done" for job in self.jobs())

    def forget_finished(self) -> None:
        with self._lock:
            self._jobs = {k: j for k, j in self._jobs.items() if j.state != "done"}

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
            self._journal(self._store.jobs.running, job)

            def progress(stage: str, fraction: float, message: str, job: IngestJob = job) -> None:
                job.stage, job.fraction, job.message = stage, fraction, message

            try:
                job.result = Ingestor(self._store, config).ingest_bytes(data, job.file_name, progress=progress)
            except Exception as exc:  # noqa: BLE001 - the worker must survive any one file
                logger.exception("ingest job %s crashed", job.file_name)
                job.result = IngestResult(job.file_name, "failed", error=f"{type(exc).__name__}: {exc}")
            self._journal(self._store.jobs.finished, job)
            job.message = job.result.error or job.message
            job.fraction = 1.0
            job.state = "done"

    @staticmethod
    def _journal(step, job: IngestJob) -> None:
        try:
            step(job.key)
        except Exception as exc:  # noqa: BLE001 - the journal only reports; it must not stop an ingest
            logger.warning("could not update the job journal for %s: %s", job.file_name, exc)

"""A background ingest worker, so that a long ingest (Chinese text embeds at ~6 chunks/s) never
blocks the app: pages submit files and poll job progress.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

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


class IngestQueue:
    def __init__(self, store: DocumentStore) -> None:
        self._store = store
        self._jobs: dict[int, IngestJob] = {}
        self._pending: queue.Queue[tuple[IngestJob, bytes, RagConfig, Any]] = queue.Queue()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._worker = threading.Thread(target=self._run, name="citewise-ingest", daemon=True)
        self._worker.start()

    def submit(self, data: bytes, file_name: str, config: RagConfig, *, metadata_llm: Any = None) -> IngestJob:
        """Queue one file; ``metadata_llm`` writes its metadata when ``config.metadata.enabled``."""
        job = IngestJob(next(self._ids), file_name)
        with self._lock:
            self._jobs[job.job_id] = job
        self._pending.put((job, data, config, metadata_llm))
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
            job, data, config, metadata_llm = self._pending.get()
            job.state = "running"

            def progress(stage: str, fraction: float, message: str, job: IngestJob = job) -> None:
                job.stage, job.fraction, job.message = stage, fraction, message

            try:
                job.result = Ingestor(self._store, config, metadata_llm=metadata_llm).ingest_bytes(
                    data, job.file_name, progress=progress)
            except Exception as exc:  # noqa: BLE001 - the worker must survive any one file
                logger.exception("ingest job %s crashed", job.file_name)
                job.result = IngestResult(job.file_name, "failed", error=f"{type(exc).__name__}: {exc}")
            job.message = job.result.error or job.message
            job.fraction = 1.0
            job.state = "done"

"""A background ingest worker, so that a long ingest never blocks the app: pages submit files and poll
job progress.

The worker parses, chunks and keyword-indexes one file at a time and hands its vectors to the
``BackgroundEmbedder`` (a job is ``embedding`` from then on, and the document is already found by
keyword search), so the next file is parsed while the previous one is embedded. A job is ``done``
when its document is completely embedded (or failed).

One worker serves every browser session of a server, so each job remembers the session (``owner``)
that submitted it: a session lists and clears only its own jobs. Files wait in memory until the
worker reaches them, so the bytes waiting are capped (``max_queued_bytes``); a file that would pass
the cap is refused with a message saying so, and nothing already queued is touched.

Jobs are also written to the library's job journal (``rag.index.jobs``) until they finish. When the
app's process ends with uploads still queued or half-ingested, the next queue on the library lists
them as failed jobs saying so, so the user knows to upload them again instead of finding them
silently missing. Their sessions are gone, so those jobs are shown to every session until it clears
them.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from rag.config import RagConfig
from rag.ingest.background import BackgroundEmbedder
from rag.ingest.ingestor import IngestResult, Ingestor
from rag.ingest.progress import IngestProgress, ProgressView
from rag.ingest.vector_fill import FillResult
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
    size: int = 0  # bytes held in memory until the file is parsed
    state: str = "queued"  # queued, running (parse → keyword index), embedding (keyword-searchable), done
    result: IngestResult | None = None
    progress: IngestProgress | None = None
    submitted_at: float = field(default_factory=time.time)
    key: str = field(default_factory=lambda: uuid.uuid4().hex)  # its row in the job journal
    everyone: bool = False  # an upload lost at a restart: its session is gone, so every session sees it
    dismissed: set[str] = field(default_factory=set)  # sessions that cleared it (for ``everyone`` jobs)

    def view(self) -> ProgressView:
        """The job's stage, counters, rate and time left now."""
        if self.progress is None:
            self.progress = IngestProgress(self.file_name)
        return self.progress.view()

    def shown_to(self, owner: str | None) -> bool:
        """Whether session ``owner`` (``None``: any caller that lists every job) lists this job."""
        if owner is None or self.owner == owner:
            return True
        return self.everyone and owner not in self.dismissed


class IngestQueue:
    def __init__(self, store: DocumentStore, *, max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
                 embedder: BackgroundEmbedder | None = None) -> None:
        """Start the worker thread.

        Args:
            store: Where documents are indexed.
            max_queued_bytes: Cap on the bytes of files submitted and not yet parsed (waiting or running).
            embedder: Stores the vectors after each file is keyword-searchable. Defaults to a new one
                (which also resumes documents left embedding).
        """
        self._store = store
        self.max_queued_bytes = max_queued_bytes
        self.embedder = embedder or BackgroundEmbedder(store)
        self.embedder.add_listener(self._embedded)
        self._jobs: dict[int, IngestJob] = {}
        self._pending: queue.Queue[tuple[IngestJob, bytes, RagConfig, Any]] = queue.Queue()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        for lost in store.jobs.take_lost():
            job = IngestJob(next(self._ids), lost.file_name, state="done",
                            result=IngestResult(lost.file_name, "failed", error=lost.message()),
                            submitted_at=lost.submitted_at, everyone=True)
            self._jobs[job.job_id] = job
            logger.warning("upload lost when process %s stopped: %s", lost.owner.pid, lost.file_name)
        self._worker = threading.Thread(target=self._run, name="citewise-ingest", daemon=True)
        self._worker.start()

    def submit(self, data: bytes, file_name: str, config: RagConfig, *, owner: str = "",
               metadata_llm: Any = None) -> IngestJob:
        """Queue one file for ingest on behalf of session ``owner``; ``metadata_llm`` writes its metadata
        when ``config.metadata.enabled``.

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
            job = IngestJob(next(self._ids), file_name, owner=owner, size=len(data),
                            progress=IngestProgress(file_name))
            self._store.jobs.record(job.key, file_name, len(data))  # before it is listed: a failure leaves no job
            self._jobs[job.job_id] = job
        self._pending.put((job, data, config, metadata_llm))
        return job

    def jobs(self, owner: str | None = None) -> list[IngestJob]:
        """Jobs in submission order: all of them, or only those ``owner`` submitted."""
        with self._lock:
            return sorted((j for j in self._jobs.values() if j.shown_to(owner)), key=lambda j: j.job_id)

    def active(self, owner: str | None = None) -> bool:
        return any(job.state != "done" for job in self.jobs(owner))

    def queued_bytes(self) -> int:
        """Bytes of every session's files not yet done."""
        with self._lock:
            return self._waiting_bytes()

    def forget_finished(self, owner: str | None = None) -> None:
        """Drop finished jobs: all of them, or those ``owner`` lists (a lost upload only from its list)."""
        with self._lock:
            for job in self._jobs.values():
                if owner is not None and job.everyone:
                    job.dismissed.add(owner)
            self._jobs = {k: j for k, j in self._jobs.items()
                          if j.state != "done" or (owner is not None and (j.owner != owner or j.everyone))}

    def _waiting_bytes(self) -> int:
        return sum(j.size for j in self._jobs.values() if j.state in ("queued", "running"))

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
            self._journal(self._store.jobs.running, job)
            try:
                result = Ingestor(self._store, config, metadata_llm=metadata_llm, background=self.embedder).ingest_bytes(
                    data, job.file_name, progress=job.progress)
            except Exception as exc:  # noqa: BLE001 - the worker must survive any one file
                logger.exception("ingest job %s crashed", job.file_name)
                result = IngestResult(job.file_name, "failed", error=f"{type(exc).__name__}: {exc}")
            # searchable from here: a restart resumes the vectors, so the upload is no longer at risk
            self._journal(self._store.jobs.finished, job)
            data = b""  # release the upload now, not when the next file arrives
            with self._lock:
                job.result = result
                job.state = "embedding" if result.status == "searchable" and not result.error else "done"
                finished = self.embedder.result(result.doc_id) if job.state == "embedding" else None
            if finished is not None and not self.embedder.active(result.doc_id):
                self._embedded(finished)  # embedded before this thread got here (a small file)

    def _embedded(self, fill: FillResult) -> None:
        """The background embedder finished a document: its job is done (completed, or failed with why)."""
        with self._lock:
            for job in self._jobs.values():
                if job.state == "embedding" and job.result is not None and job.result.doc_id == fill.doc_id:
                    if fill.status == "stopped":  # the app is stopping: it resumes at the next start
                        continue
                    if fill.status == "completed":
                        job.result.status = "completed"
                    elif fill.status == "gone" and self._store.registry.get(fill.doc_id) is None:
                        job.result.status = "failed"
                        job.result.error = "deleted while its vectors were being stored"
                    elif fill.status == "gone":  # re-indexed meanwhile: that re-index stores its vectors
                        pass
                    elif fill.status == "busy":  # taken over by another process, which stores them
                        job.result.error = "its vectors are being stored by another process"
                    else:  # still keyword-searchable; the error says why the vectors stopped
                        job.result.error = fill.error
                    job.state = "done"

    @staticmethod
    def _journal(step, job: IngestJob) -> None:
        try:
            step(job.key)
        except Exception as exc:  # noqa: BLE001 - the journal only reports; it must not stop an ingest
            logger.warning("could not update the job journal for %s: %s", job.file_name, exc)


def _size(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB" if size >= 1024 * 1024 else f"{size / 1024:.0f} KB"

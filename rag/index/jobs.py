"""A durable record of queued ingest jobs, so uploads lost when the app stops are reported.

The app's ingest queue lives in memory: if its process ends (a crash, ``kill -9``, a restart) before
the worker reaches an upload, the upload is gone. Each submitted job is therefore written here (file
name, size, owner process) and removed when it finishes; a job whose owner is no longer running was
lost, and the next queue on the library reports it so the user can upload the file again.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rag.index.ownership import Owner, current

_BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class LostJob:
    """An upload that was queued (or being ingested) when its process ended."""

    file_name: str
    size: int
    state: str  # queued or running when the owner stopped
    owner: Owner
    submitted_at: float

    def message(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.submitted_at))
        where = ("was being ingested" if self.state == "running" else "was still waiting in the queue")
        return (f"not indexed: the upload (queued {when}) {where} when process {self.owner.pid} stopped; "
                "upload it again")


class JobJournal:
    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=_BUSY_TIMEOUT_S)
        self._db.execute("PRAGMA journal_mode=WAL")
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS ingest_jobs (job_key TEXT PRIMARY KEY, file_name TEXT"
                             " NOT NULL, size INTEGER NOT NULL, state TEXT NOT NULL, pid INTEGER NOT NULL,"
                             " started TEXT NOT NULL, submitted_at REAL NOT NULL)")

    def record(self, job_key: str, file_name: str, size: int) -> None:
        owner = current()
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO ingest_jobs VALUES (?, ?, ?, 'queued', ?, ?, ?)",
                             (job_key, file_name, size, owner.pid, owner.started, time.time()))

    def running(self, job_key: str) -> None:
        with self._lock, self._db:
            self._db.execute("UPDATE ingest_jobs SET state = 'running' WHERE job_key = ?", (job_key,))

    def finished(self, job_key: str) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM ingest_jobs WHERE job_key = ?", (job_key,))

    def lost(self) -> list[LostJob]:
        """Jobs whose owner process is gone, oldest first (left in place)."""
        return [job for _key, job in self._lost()]

    def take_lost(self) -> list[LostJob]:
        """Jobs whose owner process is gone, removed so that they are reported once."""
        found = self._lost()
        with self._lock, self._db:
            self._db.executemany("DELETE FROM ingest_jobs WHERE job_key = ?", [(key,) for key, _ in found])
        return [job for _key, job in found]

    def _lost(self) -> list[tuple[str, LostJob]]:
        with self._lock:
            rows = self._db.execute("SELECT job_key, file_name, size, state, pid, started, submitted_at"
                                    " FROM ingest_jobs ORDER BY submitted_at").fetchall()
        jobs = [(row[0], LostJob(row[1], int(row[2]), row[3], Owner(int(row[4]), row[5]), float(row[6])))
                for row in rows]
        return [(key, job) for key, job in jobs if not job.owner.alive()]

    def close(self) -> None:
        with self._lock:
            self._db.close()

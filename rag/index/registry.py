"""The document registry: one SQLite row per document, with its status and what ingest learned.

Status moves pending → processing [→ preliminary] → embedding → completed | failed; a delete marks the
row ``deleting`` before it removes anything, so an interrupted delete is finished at the next start.
``preliminary``: a long PDF is keyword-searchable from its text layer while its tables and scans are
read (``rag.ingest.quick_pass``); ``embedding``: keyword-searchable with its final chunks, vectors being
stored batch by batch (``rag.index.searchable``); ``completed``: every chunk has its vector. The three
are searchable (``SEARCHABLE``). Recovery treats a dead ingest's ``preliminary`` row like a
``processing`` one (purged, failed), keeps an ``embedding`` row (its embedding resumes) and only
releases a dead embedder's claim on it. A row being worked on
carries a *claim*: the process that owns the work (pid and start time, see ``ownership``) and what it
does (ingest, reindex, delete). Recovery touches a row only when its claim's owner is gone.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from rag.documents import DocumentRecord
from rag.index.ownership import Owner

STATUSES = ("pending", "processing", "preliminary", "embedding", "completed", "failed", "deleting")
SEARCHABLE = ("preliminary", "embedding", "completed")  # statuses retrieval may return
UNFINISHED = ("pending", "processing", "preliminary", "deleting")
_COLUMNS = [f.name for f in fields(DocumentRecord)]
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM documents"  # named: the table's column order may differ
_INTEGER_COLUMNS = ("pages", "chunks", "tables")
_BUSY_TIMEOUT_S = 30.0


def _column_type(name: str) -> str:
    return "REAL" if name.endswith("_at") else "INTEGER" if name in _INTEGER_COLUMNS else "TEXT"


@dataclass(frozen=True)
class Claim:
    """A process working on a document: ``operation`` is ingest, reindex or delete."""

    doc_id: str
    owner: Owner
    operation: str
    claimed_at: float

    def alive(self) -> bool:
        return self.owner.alive()

    def describe(self) -> str:
        verb = {"ingest": "being ingested", "reindex": "being re-indexed", "delete": "being deleted",
                "embed": "being embedded"}
        return (f"{verb.get(self.operation, 'in use')} by {self.owner.describe()} since "
                f"{time.strftime('%H:%M:%S', time.localtime(self.claimed_at))}")


class Registry:
    def __init__(self, path: Path, *, new: dict[str, str] | None = None) -> None:
        """Open (or create) the registry at ``path``; a library with no document and no facts yet records ``new``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=_BUSY_TIMEOUT_S)
        self._db.execute("PRAGMA journal_mode=WAL")
        columns = ", ".join(f"{name} {_column_type(name)}" + (" PRIMARY KEY" if name == "doc_id" else "")
                            for name in _COLUMNS)
        with self._db:
            self._db.execute(f"CREATE TABLE IF NOT EXISTS documents ({columns})")
            # a registry written before a field was added gets the column, so its rows stay readable
            present = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
            for name in _COLUMNS:
                if name not in present:
                    default = "0" if _column_type(name) in ("INTEGER", "REAL") else "''"
                    self._db.execute(f"ALTER TABLE documents ADD COLUMN {name} {_column_type(name)} DEFAULT {default}")
            self._db.execute("CREATE UNIQUE INDEX IF NOT EXISTS documents_sha ON documents(sha256)")
            self._db.execute("CREATE INDEX IF NOT EXISTS documents_status ON documents(status)")  # per write
            self._db.execute("CREATE TABLE IF NOT EXISTS claims (doc_id TEXT PRIMARY KEY, pid INTEGER NOT NULL,"
                             " started TEXT NOT NULL, operation TEXT NOT NULL, claimed_at REAL NOT NULL)")
            self._db.execute("CREATE TABLE IF NOT EXISTS library (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            fresh = not self._db.execute("SELECT 1 FROM documents UNION ALL SELECT 1 FROM library LIMIT 1").fetchone()
            if new and fresh:
                self._db.executemany("INSERT INTO library VALUES (?, ?)", list(new.items()))
        self._own_commits = 0
        self._hidden: tuple[tuple[int, int], frozenset[str]] | None = None

    # -- documents ----------------------------------------------------------------------------

    def get(self, doc_id: str) -> DocumentRecord | None:
        return self._one(f"{_SELECT} WHERE doc_id = ?", (doc_id,))

    def by_sha256(self, sha256: str) -> DocumentRecord | None:
        return self._one(f"{_SELECT} WHERE sha256 = ?", (sha256,))

    def all(self) -> list[DocumentRecord]:
        with self._lock:
            rows = self._db.execute(f"{_SELECT} ORDER BY created_at").fetchall()
        return [DocumentRecord(*row) for row in rows]

    def fingerprint(self) -> tuple[int, float]:
        """(row count, latest update time): changes whenever any row is added, changed or removed."""
        with self._lock:
            count, latest = self._db.execute("SELECT COUNT(*), MAX(updated_at) FROM documents").fetchone()
        return int(count), float(latest or 0.0)

    def ids_with_status(self, status: str) -> set[str]:
        with self._lock:
            rows = self._db.execute("SELECT doc_id FROM documents WHERE status = ?", (status,)).fetchall()
        return {row[0] for row in rows}

    def hidden_ids(self) -> frozenset[str]:
        """Documents retrieval must not return: every row that is not ``SEARCHABLE`` (cached until any
        connection, in any process, commits a change)."""
        with self._lock:
            token = (int(self._db.execute("PRAGMA data_version").fetchone()[0]), self._own_commits)
            if self._hidden is None or self._hidden[0] != token:
                rows = self._db.execute("SELECT doc_id FROM documents WHERE status NOT IN "
                                        f"({', '.join(repr(s) for s in SEARCHABLE)})").fetchall()
                self._hidden = (token, frozenset(row[0] for row in rows))
            return self._hidden[1]

    def unfinished(self) -> list[DocumentRecord]:
        """Rows being ingested, re-indexed or deleted (or left so by a process that died)."""
        marks = ",".join("?" * len(UNFINISHED))
        with self._lock:
            rows = self._db.execute(f"{_SELECT} WHERE status IN ({marks}) ORDER BY created_at",
                                    UNFINISHED).fetchall()
        return [DocumentRecord(*row) for row in rows]

    def upsert(self, record: DocumentRecord) -> DocumentRecord:
        with self._lock, self._db:
            record = self._upsert(record)
        self._committed()
        return record

    def update(self, doc_id: str, **changes: Any) -> DocumentRecord:
        if "status" in changes and changes["status"] not in STATUSES:
            raise ValueError(f"unknown status {changes['status']!r}")
        with self._lock:
            record = self.get(doc_id)
            if record is None:
                raise KeyError(doc_id)
            return self.upsert(replace(record, **changes))

    def delete(self, doc_id: str) -> None:
        """Remove a document's row and its claim."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._db.execute("DELETE FROM claims WHERE doc_id = ?", (doc_id,))
        self._committed()

    # -- facts about the whole library ----------------------------------------------------------

    def fact(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM library WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_fact(self, key: str, value: str) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO library VALUES (?, ?)", (key, value))

    # -- claims -------------------------------------------------------------------------------

    def insert_claimed(self, record: DocumentRecord, owner: Owner, operation: str) -> DocumentRecord:
        """Write a new row and its claim in one transaction (a crash leaves both or neither)."""
        with self._lock, self._db:
            record = self._upsert(record)
            self._claim(record.doc_id, owner, operation)
        self._committed()
        return record

    def claim(self, doc_id: str, owner: Owner, operation: str) -> None:
        with self._lock, self._db:
            self._claim(doc_id, owner, operation)
        self._committed()

    def release(self, doc_id: str) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM claims WHERE doc_id = ?", (doc_id,))
        self._committed()

    def claim_of(self, doc_id: str) -> Claim | None:
        with self._lock:
            row = self._db.execute("SELECT doc_id, pid, started, operation, claimed_at FROM claims"
                                   " WHERE doc_id = ?", (doc_id,)).fetchone()
        return _claim(row) if row else None

    def claims(self) -> list[Claim]:
        with self._lock:
            rows = self._db.execute("SELECT doc_id, pid, started, operation, claimed_at FROM claims").fetchall()
        return [_claim(row) for row in rows]

    def live_claim(self, doc_id: str) -> Claim | None:
        """The claim on ``doc_id`` if its owner still runs."""
        claim = self.claim_of(doc_id)
        return claim if claim is not None and claim.alive() else None

    # -- internals ----------------------------------------------------------------------------

    def _upsert(self, record: DocumentRecord) -> DocumentRecord:
        now = time.time()
        record = replace(record, created_at=record.created_at or now, updated_at=now)
        placeholders = ", ".join("?" for _ in _COLUMNS)
        self._db.execute(f"INSERT OR REPLACE INTO documents ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
                         [getattr(record, name) for name in _COLUMNS])
        return record

    def _claim(self, doc_id: str, owner: Owner, operation: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                         (doc_id, owner.pid, owner.started, operation, time.time()))

    def _committed(self) -> None:
        with self._lock:
            self._own_commits += 1

    def _one(self, sql: str, args: tuple) -> DocumentRecord | None:
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        return DocumentRecord(*row) if row else None

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _claim(row: tuple) -> Claim:
    return Claim(doc_id=row[0], owner=Owner(int(row[1]), str(row[2])), operation=row[3], claimed_at=float(row[4]))

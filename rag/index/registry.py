"""The document registry: one SQLite row per document, with its status and what ingest learned.

Status moves pending → processing → completed | failed. A row still pending or processing when the
store opens belongs to an ingest that died; the store cleans such rows up (see ``DocumentStore``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from rag.documents import DocumentRecord

STATUSES = ("pending", "processing", "completed", "failed")
_COLUMNS = [f.name for f in fields(DocumentRecord)]
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM documents"  # named: the table's column order may differ
_INTEGER_COLUMNS = ("pages", "chunks", "tables")


def _column_type(name: str) -> str:
    return "REAL" if name.endswith("_at") else "INTEGER" if name in _INTEGER_COLUMNS else "TEXT"


class Registry:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        columns = ", ".join(f"{name} {_column_type(name)}" + (" PRIMARY KEY" if name == "doc_id" else "")
                            for name in _COLUMNS)
        self._db.execute(f"CREATE TABLE IF NOT EXISTS documents ({columns})")
        # a registry written before a field was added gets the column, so its rows stay readable
        present = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
        for name in _COLUMNS:
            if name not in present:
                default = "0" if _column_type(name) in ("INTEGER", "REAL") else "''"
                self._db.execute(f"ALTER TABLE documents ADD COLUMN {name} {_column_type(name)} DEFAULT {default}")
        self._db.execute("CREATE UNIQUE INDEX IF NOT EXISTS documents_sha ON documents(sha256)")
        self._db.commit()

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

    def unfinished(self) -> list[DocumentRecord]:
        return [r for r in self.all() if r.status in ("pending", "processing")]

    def upsert(self, record: DocumentRecord) -> DocumentRecord:
        now = time.time()
        record = replace(record, created_at=record.created_at or now, updated_at=now)
        placeholders = ", ".join("?" for _ in _COLUMNS)
        with self._lock:
            self._db.execute(f"INSERT OR REPLACE INTO documents ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
                             [getattr(record, name) for name in _COLUMNS])
            self._db.commit()
        return record

    def update(self, doc_id: str, **changes: Any) -> DocumentRecord:
        if "status" in changes and changes["status"] not in STATUSES:
            raise ValueError(f"unknown status {changes['status']!r}")
        record = self.get(doc_id)
        if record is None:
            raise KeyError(doc_id)
        return self.upsert(replace(record, **changes))

    def delete(self, doc_id: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            self._db.commit()

    def _one(self, sql: str, args: tuple) -> DocumentRecord | None:
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        return DocumentRecord(*row) if row else None

    def close(self) -> None:
        self._db.close()

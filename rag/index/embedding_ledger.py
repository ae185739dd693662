"""How far each keyword-searchable document's vectors have got: chunks embedded of how many, and why
embedding stopped if it did.

A document whose registry status is ``embedding`` is searchable by keywords and partly by vectors; its
row here counts the chunks whose vectors are stored. The row is written in the same step as each batch
of vectors (under the library's write lock), so after a crash it never claims more than Chroma holds;
resuming re-checks Chroma anyway. ``completed`` documents have no row: completed means every chunk has
its vector. Libraries from before this table have no ``embedding`` documents, so nothing migrates.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_BUSY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class EmbeddingState:
    """Vectors of one document: ``embedded`` of ``total`` chunks stored; ``error`` says why it stopped."""

    doc_id: str
    embedded: int
    total: int
    error: str = ""
    updated_at: float = 0.0

    @property
    def fraction(self) -> float:
        return self.embedded / self.total if self.total else 1.0


class EmbeddingLedger:
    """The ``vector_progress`` table (in the registry's SQLite file).

    Args:
        path: The registry database file.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=_BUSY_TIMEOUT_S)
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS vector_progress (doc_id TEXT PRIMARY KEY,"
                             " embedded INTEGER NOT NULL, total INTEGER NOT NULL, error TEXT NOT NULL DEFAULT '',"
                             " updated_at REAL NOT NULL)")

    def set(self, doc_id: str, embedded: int, total: int, *, error: str = "") -> EmbeddingState:
        state = EmbeddingState(doc_id, int(embedded), int(total), error, time.time())
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO vector_progress VALUES (?, ?, ?, ?, ?)",
                             (state.doc_id, state.embedded, state.total, state.error, state.updated_at))
        return state

    def get(self, doc_id: str) -> EmbeddingState | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM vector_progress WHERE doc_id = ?", (doc_id,)).fetchone()
        return EmbeddingState(*row) if row else None

    def all(self) -> dict[str, EmbeddingState]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM vector_progress").fetchall()
        return {row[0]: EmbeddingState(*row) for row in rows}

    def delete(self, doc_id: str) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM vector_progress WHERE doc_id = ?", (doc_id,))

    def close(self) -> None:
        with self._lock:
            self._db.close()

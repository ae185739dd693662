"""The keyword index's source of truth: every chunk's BM25 tokens, text and metadata, in SQLite.

The bm25s matrices (``keywords``, ``bm25_files``) are built from these rows and checked against a
digest of them, so anything that changes the rows — a write, a crash between committing rows and
saving matrices, a re-tokenization — makes the saved matrices untrusted until they are rebuilt.

Tokens depend on the tokenizer (``rag.text.tokenizer.TOKENIZER_VERSION``; version 2 reads
traditional Chinese as simplified). Rows tokenized by another version are re-tokenized from their
stored chunk text (``retokenize``), so a library indexed before traditional Chinese was normalised
matches traditional questions without re-embedding anything.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Iterable, Sequence

from rag.documents import Chunk
from rag.text.tokenizer import TOKENIZER_VERSION

logger = logging.getLogger(__name__)

Row = tuple[str, str, str]  # chunk_id, doc_id, tokens JSON


class KeywordRows:
    """The ``chunk_tokens`` table of one keyword index folder (thread-safe; WAL, so other processes
    read while one writes).

    Args:
        path: The SQLite file (``tokens.sqlite3``).
    """

    def __init__(self, path: Path) -> None:
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        with self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS chunk_tokens ("
                " chunk_id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, position INTEGER NOT NULL, tokens TEXT NOT NULL,"
                " text TEXT NOT NULL, metadata TEXT NOT NULL)"
            )
            self._db.execute("CREATE INDEX IF NOT EXISTS chunk_tokens_doc ON chunk_tokens(doc_id)")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    # -- writes (the caller holds the library's write lock) -------------------------------------

    def replace(self, doc_ids: Iterable[str], rows: Sequence[tuple[str, str, int, str, str, str]]) -> None:
        """Replace the rows of ``doc_ids`` with ``rows`` in one transaction: a crash keeps the old rows
        or the new, never a mix."""
        with self._lock, self._db:
            self._db.executemany("DELETE FROM chunk_tokens WHERE doc_id = ?", [(d,) for d in doc_ids])
            self._db.executemany("INSERT INTO chunk_tokens VALUES (?, ?, ?, ?, ?, ?)", rows)

    def delete(self, doc_id: str) -> int:
        with self._lock, self._db:
            return self._db.execute("DELETE FROM chunk_tokens WHERE doc_id = ?", (doc_id,)).rowcount

    def stale_version(self) -> int | None:
        """The tokenizer version the rows were made by, when it is not the current one (else None)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'tokenizer_version'").fetchone()
        stored = int(row[0]) if row else 1  # indexes from before the version was recorded: version 1
        return None if stored == TOKENIZER_VERSION else stored

    def retokenize(self, tokenize: Callable[[str], list[str]], keyword_text: Callable[[Chunk], str]) -> bool:
        """Re-tokenize every row made by another tokenizer version, with the version, in one transaction;
        returns whether anything changed."""
        with self._lock:
            stored = self.stale_version()
            if stored is None:
                return False
            rows = self._db.execute("SELECT chunk_id, text, metadata FROM chunk_tokens").fetchall()
            if rows:
                logger.info("re-tokenizing %d chunks (tokenizer version %s -> %s)", len(rows), stored,
                            TOKENIZER_VERSION)
            updates = [(json.dumps(tokenize(keyword_text(Chunk.from_metadata(text, json.loads(meta)))),
                                   ensure_ascii=False), chunk_id) for chunk_id, text, meta in rows]
            with self._db:
                self._db.executemany("UPDATE chunk_tokens SET tokens = ? WHERE chunk_id = ?", updates)
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('tokenizer_version', ?)",
                                 (str(TOKENIZER_VERSION),))
            return True

    # -- reads --------------------------------------------------------------------------------

    def rows(self) -> list[Row]:
        """Every row in index order (the order the matrices are built in)."""
        with self._lock:
            return self._db.execute(
                "SELECT chunk_id, doc_id, tokens FROM chunk_tokens ORDER BY doc_id, position, chunk_id").fetchall()

    def any(self) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM chunk_tokens LIMIT 1").fetchone() is not None

    def data_version(self) -> int:
        """Changes when another connection (another instance or process) commits to the file."""
        with self._lock:
            return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def get(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        found: dict[str, Chunk] = {}
        ids = list(chunk_ids)
        with self._lock:
            for start in range(0, len(ids), 500):
                batch = ids[start:start + 500]
                marks = ",".join("?" * len(batch))
                for chunk_id, text, metadata in self._db.execute(
                        f"SELECT chunk_id, text, metadata FROM chunk_tokens WHERE chunk_id IN ({marks})", batch):
                    found[chunk_id] = Chunk.from_metadata(text, json.loads(metadata))
        return found

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        with self._lock:
            rows = self._db.execute("SELECT text, metadata FROM chunk_tokens WHERE doc_id = ? ORDER BY position",
                                    (doc_id,)).fetchall()
        return [Chunk.from_metadata(text, json.loads(metadata)) for text, metadata in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()

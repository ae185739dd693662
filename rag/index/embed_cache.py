"""Embeddings keyed by (model, sha256 of the text): re-ingesting unchanged text costs nothing."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30.0)  # other processes write too
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS embeddings ("
                         " model_id TEXT, text_sha TEXT, vector BLOB, PRIMARY KEY (model_id, text_sha))")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def embed(self, model_id: str, texts: Sequence[str],
              compute: Callable[[list[str]], Sequence[Sequence[float]]]) -> np.ndarray:
        """Vectors for ``texts``; only the texts not cached yet go to ``compute`` (in one call)."""
        keys = [text_key(t) for t in texts]
        cached = self._lookup(model_id, set(keys))
        missing = [i for i, key in enumerate(keys) if key not in cached]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            computed = np.asarray(compute([texts[i] for i in missing]), dtype=np.float32)
            rows = [(model_id, keys[i], computed[j].tobytes()) for j, i in enumerate(missing)]
            with self._lock:
                self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
                self._db.commit()
            for j, i in enumerate(missing):
                cached[keys[i]] = computed[j]
        return np.stack([cached[key] for key in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def _lookup(self, model_id: str, keys: set[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        key_list = list(keys)
        with self._lock:
            for start in range(0, len(key_list), 500):
                batch = key_list[start:start + 500]
                marks = ",".join("?" * len(batch))
                for key, blob in self._db.execute(
                        f"SELECT text_sha, vector FROM embeddings WHERE model_id = ? AND text_sha IN ({marks})",
                        [model_id, *batch]):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def close(self) -> None:
        self._db.close()

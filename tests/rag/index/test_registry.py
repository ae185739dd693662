from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.documents import DocumentRecord
from rag.index.embed_cache import EmbeddingCache
from rag.index.registry import Registry


def test_registry_round_trip_and_status_rules(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "r.sqlite3")
    registry.upsert(DocumentRecord(doc_id="a", file_name="a.pdf", sha256="s1", status="pending"))
    registry.update("a", status="processing")
    assert [r.doc_id for r in registry.unfinished()] == ["a"]
    registry.update("a", status="completed", pages=3, chunks=7)
    record = registry.by_sha256("s1")
    assert record and record.pages == 3 and record.chunks == 7 and record.created_at > 0
    with pytest.raises(ValueError, match="unknown status"):
        registry.update("a", status="done")
    registry.delete("a")
    assert registry.get("a") is None and registry.all() == []


def test_embedding_cache_computes_only_new_texts(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite3")
    calls: list[list[str]] = []

    def compute(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [[float(len(t)), 1.0] for t in texts]

    first = cache.embed("m", ["aa", "bbb"], compute)
    second = cache.embed("m", ["bbb", "cccc", "aa"], compute)
    assert calls == [["aa", "bbb"], ["cccc"]]
    np.testing.assert_allclose(second, [[3, 1], [4, 1], [2, 1]])
    np.testing.assert_allclose(first[0], second[2])
    cache.embed("other-model", ["aa"], compute)  # the model is part of the key
    assert calls[-1] == ["aa"]


def test_fingerprint_and_status_sets_follow_every_change(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "r.sqlite3")
    assert registry.fingerprint() == (0, 0.0)
    registry.upsert(DocumentRecord(doc_id="a", file_name="a.pdf", sha256="s1", status="completed"))
    registry.upsert(DocumentRecord(doc_id="b", file_name="b.pdf", sha256="s2", status="failed"))
    first = registry.fingerprint()
    assert first[0] == 2 and registry.ids_with_status("completed") == {"a"}
    registry.update("b", status="completed")
    assert registry.fingerprint() != first and registry.ids_with_status("completed") == {"a", "b"}


def test_a_registry_written_before_new_fields_is_upgraded_in_place(tmp_path: Path) -> None:
    import sqlite3

    old_columns = ("doc_id TEXT PRIMARY KEY, file_name TEXT, sha256 TEXT, status TEXT, file_type TEXT, pages INTEGER, "
                   "chunks INTEGER, language TEXT, error TEXT, created_at REAL, updated_at REAL, stored_path TEXT, "
                   "summary TEXT, keywords TEXT, topics TEXT, key_phrases TEXT")
    path = tmp_path / "registry.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE documents ({old_columns})")
        db.execute("INSERT INTO documents VALUES ('d1', 'old.pdf', 'abc', 'completed', 'pdf', 3, 7, 'en', '', 1.0, "
                   "2.0, '/x/old.pdf', 'An old summary.', 'a, b', '', '')")
    registry = Registry(path)
    old = registry.get("d1")
    assert (old.file_name, old.chunks, old.summary, old.ocr_pages, old.tables, old.notes) == (
        "old.pdf", 7, "An old summary.", "", 0, "")
    registry.update("d1", ocr_pages="1-3", tables=2, notes="page 2: OCR failed")
    again = Registry(path).get("d1")
    assert (again.ocr_pages, again.tables, again.notes, again.summary) == ("1-3", 2, "page 2: OCR failed",
                                                                         "An old summary.")

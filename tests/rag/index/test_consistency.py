"""The consistency check the crash suites rely on reports each kind of damage it is meant to find."""

from __future__ import annotations

from pathlib import Path

from rag.config import RagConfig
from rag.index import consistency
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from tests import fixtures


def test_each_kind_of_damage_is_reported(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    ingestor = Ingestor(store, config)
    english = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path)).doc_id
    chinese = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path)).doc_id
    assert consistency.problems(store) == []

    with store.writing("damaging the library for a test"):
        store.vectors.delete_document(english)
    assert any("Chroma holds" in p for p in consistency.problems(store))

    store.keywords.delete(chinese)
    assert any("BM25 rows hold" in p for p in consistency.problems(store))

    store.registry.update(english, status="processing")
    assert any("unfinished rows" in p for p in consistency.problems(store))
    assert not any("unfinished rows" in p for p in consistency.problems(store, quiescent=False))

    (store.files_dir / "0123456789abcdef").mkdir()
    assert any("folders without a registry row" in p for p in consistency.problems(store))

"""A library embedded before Chinese was read in simplified script gets those chunks embedded again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rag.config import RagConfig
from rag.index.consistency import problems
from rag.index.ownership import current
from rag.index.store import DocumentStore
from rag.ingest.background import BackgroundEmbedder
from rag.ingest.embedding import embedding_text, script_changes_embedding
from rag.ingest.embedding_upgrade import replace_older_vectors, stored_text_version
from rag.ingest.ingestor import Ingestor
from rag.models.embedding_router import EMBEDDING_TEXT_VERSION, EmbedderRouter
from tests import fixtures
from tests.fakes import HashEmbedding

SOON = 30.0


def _router(config: RagConfig) -> EmbedderRouter:
    return EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))


def _vectors(store: DocumentStore, doc_id: str) -> dict[tuple[str, str], np.ndarray]:
    """(model, chunk id) -> the stored vector, for every model holding one of the document's chunks."""
    ids = [chunk.chunk_id for chunk in store.chunks(doc_id)]
    found = {}
    for model_id in store.vectors.model_ids():
        for chunk_id, entry in store.vectors.get(model_id, ids, with_embeddings=True).items():
            found[model_id, chunk_id] = np.asarray(entry["embedding"])
    return found


@pytest.fixture
def older_library(config: RagConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A library as embedded before ``EMBEDDING_TEXT_VERSION`` 2: chunks read as written, no record of the form."""
    with monkeypatch.context() as patch:
        patch.setattr("rag.ingest.embedding.to_simplified", lambda text: text)
        store = DocumentStore(config, _router(config))
        ingestor = Ingestor(store, config)
        docs = {name: ingestor.ingest_path(make(tmp_path)).doc_id for name, make in (
            ("traditional", fixtures.make_traditional_chinese_pdf), ("simplified", fixtures.make_chinese_pdf),
            ("english", fixtures.make_english_pdf))}
        store.close()
    with sqlite3.connect(config.data_path / "registry.sqlite3") as db:
        db.execute("DELETE FROM library")
    return docs


def test_a_new_library_records_the_current_form_and_reopens_nothing(config: RagConfig, tmp_path: Path) -> None:
    store = DocumentStore(config, _router(config))
    try:
        assert stored_text_version(store) == EMBEDDING_TEXT_VERSION
        doc = Ingestor(store, config).ingest_path(fixtures.make_traditional_chinese_pdf(tmp_path))
        assert doc.status == "completed"
        assert replace_older_vectors(store) == [] and store.document(doc.doc_id).status == "completed"
    finally:
        store.close()


def test_traditional_chunks_of_an_older_library_are_embedded_again_in_simplified_script(
        config: RagConfig, older_library: dict[str, str]) -> None:
    store = DocumentStore(config, _router(config))
    try:
        assert stored_text_version(store) == 1
        traditional = store.chunks(older_library["traditional"])
        assert traditional and all(script_changes_embedding(chunk) for chunk in traditional)
        untouched = {doc: _vectors(store, older_library[doc]) for doc in ("simplified", "english")}
        stale = _vectors(store, older_library["traditional"])

        background = BackgroundEmbedder(store, batch_size=2)
        background.wait(timeout=SOON)
        background.close()

        renewed = _vectors(store, older_library["traditional"])
        assert renewed.keys() == stale.keys()
        by_id = {chunk.chunk_id: chunk for chunk in traditional}
        for (model_id, chunk_id), vector in renewed.items():
            expected = HashEmbedding(model_id=model_id).get_text_embedding(embedding_text(by_id[chunk_id]))
            assert np.allclose(vector, expected)
            assert not np.allclose(vector, stale[model_id, chunk_id])
        for doc, vectors in untouched.items():  # their embedding text did not change
            now = _vectors(store, older_library[doc])
            assert now.keys() == vectors.keys() and all(np.allclose(now[key], vectors[key]) for key in vectors)
        assert {record.status for record in store.documents()} == {"completed"}
        assert stored_text_version(store) == EMBEDDING_TEXT_VERSION and problems(store) == []
        assert replace_older_vectors(store) == []
    finally:
        store.close()


def test_a_reopened_document_stays_keyword_searchable_and_counts_its_missing_vectors(
        config: RagConfig, older_library: dict[str, str]) -> None:
    store = DocumentStore(config, _router(config))
    try:
        doc_id = older_library["traditional"]
        chunks = store.chunks(doc_id)
        assert replace_older_vectors(store) == [doc_id]
        assert store.document(doc_id).status == "embedding"
        waiting = store.keyword_only([doc_id])
        assert [(w.doc_id, w.embedded, w.total) for w in waiting] == [(doc_id, 0, len(chunks))]
        assert store.vectors.get("hash-e5-small", [c.chunk_id for c in chunks]) == {}
        assert store.keywords.get([c.chunk_id for c in chunks]).keys() == {c.chunk_id for c in chunks}
    finally:
        store.close()


def test_a_document_another_process_works_on_is_left_and_checked_at_the_next_start(
        config: RagConfig, older_library: dict[str, str]) -> None:
    store = DocumentStore(config, _router(config))
    try:
        doc_id = older_library["traditional"]
        store.registry.claim(doc_id, current(), "reindex")
        assert replace_older_vectors(store) == []
        assert store.document(doc_id).status == "completed" and stored_text_version(store) == 1
        store.registry.release(doc_id)
        assert replace_older_vectors(store) == [doc_id] and stored_text_version(store) == EMBEDDING_TEXT_VERSION
    finally:
        store.close()

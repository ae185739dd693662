"""A library embedded before the second English embedder was configured gets just the missing vectors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rag.config import RagConfig
from rag.index.consistency import problems
from rag.index.ownership import current
from rag.index.searchable import reopen_incomplete
from rag.index.store import DocumentStore
from rag.ingest.background import BackgroundEmbedder
from rag.ingest.ingestor import Ingestor
from rag.models.embedding_router import EmbedderRouter
from tests import fixtures
from tests.fakes import HashEmbedding

SOON = 30.0


def _router(config: RagConfig) -> EmbedderRouter:
    return EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))


def test_a_completed_english_document_gets_its_second_vectors_when_that_embedder_is_configured(
        config: RagConfig, tmp_path: Path) -> None:
    before = replace(config, embedding=replace(config.embedding, second_english_model="")).validate()
    store = DocumentStore(before, _router(before))
    english = Ingestor(store, before).ingest_path(fixtures.make_english_pdf(tmp_path))
    chinese = Ingestor(store, before).ingest_path(fixtures.make_chinese_pdf(tmp_path))
    assert english.status == chinese.status == "completed"
    assert store.vectors.model_ids() == ["hash-e5-small", "hash-minilm"]
    assert store.vectors.count("hash-e5-small") == chinese.chunks  # e5 holds only the Chinese chunks
    store.close()

    now = DocumentStore(config, _router(config))  # the default: e5-small is also the second English embedder
    try:
        background = BackgroundEmbedder(now, batch_size=2)
        background.wait(timeout=SOON)
        background.close()
        assert now.document(english.doc_id).status == "completed"
        assert now.vectors.count("hash-minilm") == english.chunks  # untouched
        assert now.vectors.count("hash-e5-small") == chinese.chunks + english.chunks  # the missing ones added
        assert now.ledger.get(english.doc_id) is None and problems(now) == []
        assert reopen_incomplete(now) == []  # nothing is missing any more
    finally:
        now.close()


def test_reopening_adds_only_second_vectors_and_leaves_claimed_or_stale_documents_alone(
        config: RagConfig, tmp_path: Path) -> None:
    before = replace(config, embedding=replace(config.embedding, second_english_model="")).validate()
    first = DocumentStore(before, _router(before))
    result = Ingestor(first, before).ingest_path(fixtures.make_english_pdf(tmp_path))
    other = Ingestor(first, before).ingest_path(fixtures.make_english_pdf(tmp_path, name="other.pdf", pages=2))
    first.close()
    store = DocumentStore(config, _router(config))
    try:
        store.vectors.delete_document(other.doc_id)  # no vector at all: a re-index's job, not this one's
        store.registry.claim(result.doc_id, current(), "reindex")  # a re-index holds it
        assert reopen_incomplete(store) == [] and store.document(result.doc_id).status == "completed"
        store.registry.release(result.doc_id)
        assert reopen_incomplete(store) == [result.doc_id] and store.document(result.doc_id).status == "embedding"
        state = store.ledger.get(result.doc_id)
        assert (state.embedded, state.total) == (result.chunks, 2 * result.chunks)  # MiniLM's are there
        assert store.document(other.doc_id).status == "completed"
    finally:
        store.close()

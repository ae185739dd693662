"""The keyword-searchable state: published keywords first, vectors batch by batch, completed only when
every vector is stored; a delete or a re-index in between makes the next batch store nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.config import RagConfig
from rag.index.registry import Registry
from rag.index.searchable import add_vectors, claim_embedding, finish_embedding, missing_chunks, publish_keywords
from rag.index.store import DocumentStore
from rag.ingest.chunking import chunk_document
from rag.ingest.parse import parse_file
from tests import fixtures


@pytest.fixture
def parsed_doc(store: DocumentStore, config: RagConfig, tmp_path: Path):
    """A registered, parsed and chunked document that has not been indexed at all."""
    from rag.documents import DocumentRecord

    path = fixtures.make_english_pdf(tmp_path)
    doc_id = "ab" * 8
    store.registry.upsert(DocumentRecord(doc_id=doc_id, file_name=path.name, sha256="0" * 64, status="processing",
                                         stored_path=str(path)))
    store.document_dir(doc_id).mkdir(parents=True)
    parsed = parse_file(path)
    return doc_id, parsed, chunk_document(parsed, doc_id, config.chunking)


def _vectors(store: DocumentStore, chunks) -> tuple[str, np.ndarray]:
    embedder = store.router.for_language("en")
    return embedder.model_id, np.asarray(embedder.get_text_embedding_batch([c.text for c in chunks]))


def test_published_keywords_are_searchable_before_any_vector(store: DocumentStore, parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages, pages=len(parsed.pages), language="en")

    record = store.document(doc_id)
    assert record.status == "embedding" and record.chunks == len(chunks)
    assert store.ledger.get(doc_id).embedded == 0 and store.ledger.get(doc_id).total == len(chunks)
    assert store.keywords.search(fixtures.EN_FACT, 3)[0].doc_id == doc_id
    assert store.vectors.count() == 0
    assert doc_id in store.searchable_ids() and doc_id not in store.completed_ids()
    [partial] = store.keyword_only()
    assert (partial.doc_id, partial.embedded, partial.total) == (doc_id, 0, len(chunks))
    assert store.pages(doc_id)[0].number == 1  # highlights work while it embeds


def test_batches_count_up_and_completed_needs_every_vector(store: DocumentStore, parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages)
    model_id, vectors = _vectors(store, chunks)
    half = len(chunks) // 2
    assert not add_vectors(store, doc_id, model_id, chunks[:half], vectors[:half], embedded=half)  # not claimed
    assert claim_embedding(store, doc_id) == "ok" and store.busy(doc_id).operation == "embed"
    assert add_vectors(store, doc_id, model_id, chunks[:half], vectors[:half], embedded=half)
    assert store.ledger.get(doc_id).embedded == half and store.vectors.count() == half
    assert missing_chunks(store, doc_id).missing == len(chunks) - half

    assert not finish_embedding(store, doc_id)  # half the vectors are missing: not completed
    assert store.document(doc_id).status == "embedding"

    assert add_vectors(store, doc_id, model_id, chunks[half:], vectors[half:], embedded=len(chunks))
    assert finish_embedding(store, doc_id)
    assert store.document(doc_id).status == "completed" and store.ledger.get(doc_id) is None
    assert store.keyword_only() == [] and store.busy(doc_id) is None  # the claim is released


def test_a_batch_after_a_delete_stores_nothing(store: DocumentStore, parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages)
    model_id, vectors = _vectors(store, chunks)
    assert claim_embedding(store, doc_id) == "ok"
    store.delete(doc_id)  # allowed while it embeds
    assert not add_vectors(store, doc_id, model_id, chunks, vectors, embedded=len(chunks))
    assert store.vectors.count() == 0 and len(store.keywords) == 0
    assert store.ledger.get(doc_id) is None and not finish_embedding(store, doc_id)


def test_a_batch_of_chunks_a_re_index_replaced_stores_nothing(store: DocumentStore, config: RagConfig,
                                                              parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages)
    model_id, vectors = _vectors(store, chunks)
    assert claim_embedding(store, doc_id) == "ok"
    from dataclasses import replace

    smaller = chunk_document(parsed, doc_id, replace(config.chunking, chunk_size=60, chunk_overlap=0))
    publish_keywords(store, doc_id, smaller, parsed.pages)  # what a re-index does before embedding again
    assert not add_vectors(store, doc_id, model_id, chunks[:2], vectors[:2], embedded=2)
    assert store.vectors.count() == 0 and store.ledger.get(doc_id).total == len(smaller)


def test_old_libraries_keep_their_meaning(tmp_path: Path) -> None:
    """A registry from before the embedding state: no new column, completed documents stay completed."""
    import sqlite3

    path = tmp_path / "data" / "registry.sqlite3"
    path.parent.mkdir(parents=True)
    Registry(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO documents (doc_id, file_name, sha256, status, chunks) VALUES "
                   "('cd', 'old.pdf', 'x', 'completed', 4)")
    config = RagConfig().with_overrides({"storage.data_dir": str(tmp_path / "data")})
    from rag.models.embedding_router import EmbedderRouter
    from tests.fakes import HashEmbedding

    store = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: HashEmbedding()))
    try:
        assert store.document("cd").status == "completed" and store.completed_ids() == {"cd"}
        assert store.keyword_only() == [] and store.searchable_ids() == {"cd"}
    finally:
        store.close()

"""The keyword-searchable state: published keywords first, vectors batch by batch, completed only when
every vector is stored; a delete or a re-index in between makes the next batch store nothing."""

from __future__ import annotations

from dataclasses import replace
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


def _vectors(store: DocumentStore, chunks, spec: str | None = None) -> tuple[str, np.ndarray]:
    """The vectors of ``chunks`` by the English model (or the model of ``spec``)."""
    embedder = store.router.for_spec(spec) if spec else store.router.for_language("en")
    return embedder.model_id, np.asarray(embedder.get_text_embedding_batch([c.text for c in chunks]))


@pytest.fixture
def many_chunks(store: DocumentStore, config: RagConfig, parsed_doc):
    """``parsed_doc`` cut small enough for several English chunks (so half of them is not none)."""
    doc_id, parsed, _ = parsed_doc
    chunks = chunk_document(parsed, doc_id, replace(config.chunking, chunk_size=60, chunk_overlap=0))
    assert len(chunks) >= 4 and {c.language for c in chunks} == {"en"}
    return doc_id, parsed, chunks


def test_published_keywords_are_searchable_before_any_vector(store: DocumentStore, parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages, pages=len(parsed.pages), language="en")

    record = store.document(doc_id)
    assert record.status == "embedding" and record.chunks == len(chunks)
    # the ledger counts vectors: English chunks get one from the English model and one from the second
    assert store.ledger.get(doc_id).embedded == 0 and store.ledger.get(doc_id).total == 2 * len(chunks)
    assert store.keywords.search(fixtures.EN_FACT, 3)[0].doc_id == doc_id
    assert store.vectors.count() == 0
    assert doc_id in store.searchable_ids() and doc_id not in store.completed_ids()
    [partial] = store.keyword_only()
    assert (partial.doc_id, partial.embedded, partial.total) == (doc_id, 0, 2 * len(chunks))
    assert partial.describe() == f"report.pdf (0/{2 * len(chunks)} vectors stored)"
    assert store.pages(doc_id)[0].number == 1  # highlights work while it embeds


def test_batches_count_up_and_completed_needs_every_vector(store: DocumentStore, many_chunks) -> None:
    doc_id, parsed, chunks = many_chunks
    publish_keywords(store, doc_id, chunks, parsed.pages)
    total = 2 * len(chunks)  # English chunks: the English model's vectors and the second model's
    model_id, vectors = _vectors(store, chunks)
    second_id, second = _vectors(store, chunks, store.router.second_english_spec())
    assert (model_id, second_id) == ("hash-minilm", "hash-e5-small")
    half = len(chunks) // 2
    assert not add_vectors(store, doc_id, model_id, chunks[:half], vectors[:half], embedded=half,
                           total=total)  # not claimed
    assert store.vectors.count() == 0
    assert claim_embedding(store, doc_id) == "ok" and store.busy(doc_id).operation == "embed"
    assert add_vectors(store, doc_id, model_id, chunks[:half], vectors[:half], embedded=half, total=total)
    assert (store.ledger.get(doc_id).embedded, store.ledger.get(doc_id).total) == (half, total)
    assert store.vectors.count(model_id) == half and store.vectors.count(second_id) == 0
    assert missing_chunks(store, doc_id).missing == total - half

    assert add_vectors(store, doc_id, model_id, chunks[half:], vectors[half:], embedded=len(chunks), total=total)
    left = missing_chunks(store, doc_id)
    assert list(left.by_model) == [second_id] and left.missing == len(chunks) and left.total == total
    # every chunk has its English vector, but not its second one: not completed, and the ledger says so
    assert not finish_embedding(store, doc_id)
    assert store.document(doc_id).status == "embedding"
    assert (store.ledger.get(doc_id).embedded, store.ledger.get(doc_id).total) == (len(chunks), total)

    assert add_vectors(store, doc_id, second_id, chunks, second, embedded=total, total=total)
    assert store.vectors.count(model_id) == len(chunks) and store.vectors.count(second_id) == len(chunks)
    assert finish_embedding(store, doc_id)
    assert store.document(doc_id).status == "completed" and store.ledger.get(doc_id) is None
    assert store.keyword_only() == [] and store.busy(doc_id) is None  # the claim is released


def test_a_batch_after_a_delete_stores_nothing(store: DocumentStore, parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages)
    model_id, vectors = _vectors(store, chunks)
    assert claim_embedding(store, doc_id) == "ok"
    store.delete(doc_id)  # allowed while it embeds
    assert not add_vectors(store, doc_id, model_id, chunks, vectors, embedded=len(chunks), total=2 * len(chunks))
    assert store.vectors.count() == 0 and len(store.keywords) == 0
    assert store.ledger.get(doc_id) is None and not finish_embedding(store, doc_id)


def test_a_batch_of_chunks_a_re_index_replaced_stores_nothing(store: DocumentStore, config: RagConfig,
                                                              parsed_doc) -> None:
    doc_id, parsed, chunks = parsed_doc
    publish_keywords(store, doc_id, chunks, parsed.pages)
    model_id, vectors = _vectors(store, chunks)
    assert claim_embedding(store, doc_id) == "ok"

    smaller = chunk_document(parsed, doc_id, replace(config.chunking, chunk_size=60, chunk_overlap=0))
    publish_keywords(store, doc_id, smaller, parsed.pages)  # what a re-index does before embedding again
    assert not add_vectors(store, doc_id, model_id, chunks[:2], vectors[:2], embedded=2, total=2 * len(chunks))
    assert store.vectors.count() == 0 and store.ledger.get(doc_id).total == 2 * len(smaller)


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


def test_the_ledger_counts_one_vector_per_chunk_and_model_of_its_language(config: RagConfig, parsed_doc,
                                                                          store: DocumentStore) -> None:
    from rag.index.searchable import vector_count, vector_groups
    from rag.models.embedding_router import EmbedderRouter
    from tests.fakes import HashEmbedding

    doc_id, parsed, chunks = parsed_doc
    chinese = [replace(chunks[0], chunk_id=f"{doc_id}:zh", text="布洛芬的每日最大剂量", language="zh")]
    groups = vector_groups(store, [*chunks, *chinese])
    assert {m: [c.chunk_id for c in g] for m, (_, g) in groups.items()} == {
        "hash-minilm": [c.chunk_id for c in chunks], "hash-e5-small": [c.chunk_id for c in [*chunks, *chinese]]}
    assert vector_count(store, [*chunks, *chinese]) == 2 * len(chunks) + 1

    off = replace(config.embedding, second_english_model="")
    router = EmbedderRouter(off, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))
    single = DocumentStore(replace(config, embedding=off), router)
    try:
        assert vector_count(single, [*chunks, *chinese]) == len(chunks) + 1
        publish_keywords(single, doc_id, chunks, parsed.pages)
        assert single.ledger.get(doc_id).total == len(chunks)  # the second model off: one vector per chunk
    finally:
        single.close()

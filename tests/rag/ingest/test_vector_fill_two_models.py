"""Vector filling with the default two English models: an English chunk has a vector from each, the
ledger counts vectors, and a document stopped between the two models resumes with only the second."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.vector_fill import fill_vectors
from rag.models.embedding_router import EmbedderRouter
from tests.rag.ingest.test_vector_fill import SMALL_CHUNKS, CountingEmbedding, _searchable


@pytest.fixture
def config(config: RagConfig) -> RagConfig:
    return config.with_overrides(SMALL_CHUNKS)


@pytest.fixture
def two_models(config: RagConfig):
    """The default embedding config (a second English model), with a counting embedder per model."""
    assert config.embedding.second_english_model and config.embedding.second_english_model != \
        config.embedding.english_model
    embedders: dict[str, CountingEmbedding] = {}

    def build(spec: str) -> CountingEmbedding:
        return embedders.setdefault(spec, CountingEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))

    store = DocumentStore(config, EmbedderRouter(config.embedding, build))
    yield store, embedders
    store.close()


def test_an_english_document_gets_both_models_vectors_counted_in_the_ledger(two_models, config: RagConfig,
                                                                            tmp_path: Path) -> None:
    store, embedders = two_models
    doc_id = _searchable(store, config, tmp_path)
    chunks = store.document(doc_id).chunks
    ledger = []

    class Watch:
        def stage(self, name, total=0, done=0, **k): ledger.append((done, total))
        def advance(self, done, **k): ledger.append((store.ledger.get(doc_id).embedded, done))

    result = fill_vectors(store, doc_id, batch_size=1, store_every=1, progress=Watch())
    assert result.status == "completed" and (result.embedded, result.total) == (2 * chunks, 2 * chunks)
    assert result.computed == 2 * chunks
    assert ledger[0] == (0, 2 * chunks)  # the stage starts at 0 of 2N vectors
    assert ledger[1:] == [(n, n) for n in range(1, 2 * chunks + 1)]  # the ledger follows every stored vector
    assert {spec: e.texts for spec, e in embedders.items()} == {"bundled:minilm": chunks, "bundled:e5-small": chunks}
    assert store.vectors.count("hash-minilm") == chunks and store.vectors.count("hash-e5-small") == chunks


def test_a_document_with_only_its_english_models_vectors_resumes_with_the_second_models(
        two_models, config: RagConfig, tmp_path: Path) -> None:
    from rag.index.searchable import add_vectors, claim_embedding, missing_chunks, stop_embedding

    store, embedders = two_models
    doc_id = _searchable(store, config, tmp_path)
    chunks = store.chunks(doc_id)
    total = 2 * len(chunks)
    assert claim_embedding(store, doc_id) == "ok"
    english = store.router.for_language("en")
    assert add_vectors(store, doc_id, "hash-minilm", chunks, english.get_text_embedding_batch([c.text for c in chunks]),
                       embedded=len(chunks), total=total)
    stop_embedding(store, doc_id)  # as when the process stopped between the two models
    embedders["bundled:minilm"].texts = 0

    left = missing_chunks(store, doc_id)
    assert list(left.by_model) == ["hash-e5-small"] and [c.chunk_id for c in left.by_model["hash-e5-small"][1]] \
        == [c.chunk_id for c in chunks]
    assert (left.embedded, left.total) == (len(chunks), total)
    [partial] = store.keyword_only()
    assert (partial.embedded, partial.total) == (len(chunks), total)

    counted = []

    class Watch:
        def stage(self, name, total=0, done=0, **k): counted.append(done)
        def advance(self, done, **k): counted.append(store.ledger.get(doc_id).embedded)

    result = fill_vectors(store, doc_id, batch_size=2, store_every=2, progress=Watch())
    assert result.status == "completed" and (result.embedded, result.total) == (total, total)
    assert result.computed == len(chunks)  # only the second model's vectors were embedded
    assert embedders["bundled:minilm"].texts == 0 and embedders["bundled:e5-small"].texts == len(chunks)
    assert counted[0] == len(chunks) and counted[-1] == total and counted == sorted(counted)
    assert store.vectors.count("hash-minilm") == len(chunks) and store.vectors.count("hash-e5-small") == len(chunks)
    assert store.document(doc_id).status == "completed" and store.ledger.get(doc_id) is None

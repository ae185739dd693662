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


def test_two_models_are_consistent_and_a_ledger_counting_more_vectors_than_chroma_holds_is_not(
        store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    from rag.index.searchable import add_vectors, claim_embedding, missing_chunks, stop_embedding

    class Nobody:
        def submit(self, doc_id, progress=None):
            return progress

    small = config.with_overrides({"chunking.chunk_size": "40", "chunking.chunk_overlap": "0"})
    done = Ingestor(store, small).ingest_path(fixtures.make_markdown(tmp_path))
    assert store.vectors.count("hash-minilm") == done.chunks and store.vectors.count("hash-e5-small") == done.chunks
    assert consistency.problems(store) == []  # two vectors per English chunk, one chunk id in each space

    doc_id = Ingestor(store, small, background=Nobody()).ingest_path(fixtures.make_english_pdf(tmp_path)).doc_id
    chunks = store.chunks(doc_id)
    assert len(chunks) >= 4 and store.ledger.get(doc_id).total == 2 * len(chunks)
    assert claim_embedding(store, doc_id) == "ok"
    half = chunks[:len(chunks) // 2]
    for model_id, (embedder, _) in missing_chunks(store, doc_id).by_model.items():  # both models, half the chunks
        vectors = embedder.get_text_embedding_batch([c.text for c in half])
        assert add_vectors(store, doc_id, model_id, half, vectors, embedded=store.ledger.get(doc_id).embedded
                           + len(half), total=2 * len(chunks))
    stop_embedding(store, doc_id)  # a resting keyword-only document, its claim released
    # 2 x half vectors over half the chunk ids: the ledger counts vectors, so this is consistent
    assert store.ledger.get(doc_id).embedded == 2 * len(half)
    assert consistency.problems(store) == []

    store.ledger.set(doc_id, 2 * len(half) + 1, 2 * len(chunks))  # one vector more than Chroma holds
    [problem] = consistency.problems(store)
    assert problem.startswith(f"{doc_id}: being embedded, Chroma holds {2 * len(half)} vectors")
    assert f"(ledger: {2 * len(half) + 1})" in problem

"""Keyword-searchable first, with the real pieces: PyMuPDF, bm25s, embedded Chroma and the bundled e5-small.

A freshly chunked Chinese document is found by BM25 before any of its vectors exist, the trace says it
is keyword-only, and vector search finds it once the background embedder has stored its vectors; a
question's query embedding does not wait behind a batch of passages (e5 has a handle for queries).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.background import BackgroundEmbedder
from rag.ingest.ingestor import Ingestor
from rag.models.priority import Priority
from rag.runtime import build_router
from tests import fixtures
from tests.fakes import make_engine

pytestmark = pytest.mark.integration


class Held:
    """Holds the document until the test hands it to the real background embedder."""

    def __init__(self) -> None:
        self.submitted: list[str] = []

    def submit(self, doc_id, progress=None):
        self.submitted.append(doc_id)
        return progress


@pytest.fixture(scope="module")
def real_router():
    return build_router(RagConfig())


def test_bm25_finds_a_fresh_document_before_its_vectors_and_vector_search_after(
        config: RagConfig, real_router, tmp_path: Path) -> None:
    store = DocumentStore(config, real_router)
    try:
        held = Held()
        result = Ingestor(store, config, background=held).ingest_path(fixtures.make_chinese_pdf(tmp_path))
        assert result.status == "searchable" and held.submitted == [result.doc_id]
        engine = make_engine(store, config)

        before = engine.search(fixtures.ZH_FACT)
        assert store.vectors.count() == 0
        assert before.nodes and before.nodes[0].node.metadata["doc_id"] == result.doc_id
        assert {c.doc_id for c in before.trace.get("bm25").candidates} == {result.doc_id}
        assert not before.trace.get("vector").candidates
        assert before.trace.details["keyword_only"][0]["doc_id"] == result.doc_id

        background = BackgroundEmbedder(store, batch_size=2, priority=Priority(grace_s=0.0), resume=False)
        background.submit(result.doc_id)
        background.wait(result.doc_id, timeout=300)
        background.close()
        assert store.document(result.doc_id).status == "completed"
        assert store.vectors.count("me5-small-q4") == result.chunks

        after = engine.search(fixtures.ZH_FACT)
        vector = after.trace.get("vector")
        assert vector.candidates and vector.candidates[0].doc_id == result.doc_id
        assert "keyword_only" not in after.trace.details
    finally:
        store.close()


def test_a_query_does_not_wait_for_a_batch_of_passages(real_router) -> None:
    e5 = real_router.for_spec(RagConfig().embedding.chinese_model)
    passages = [fixtures.ZH_FACT * 12] * 16  # seconds of work on this machine
    finished = threading.Event()

    def embed_passages() -> None:
        e5.get_text_embedding_batch(passages)
        finished.set()

    worker = threading.Thread(target=embed_passages)
    worker.start()
    while not e5._lock.locked() and not finished.is_set():  # the passages are inside the engine now
        time.sleep(0.001)
    assert not finished.is_set()
    vector = e5.get_query_embedding("布洛芬的最大剂量是多少？")
    query_done_first = not finished.is_set()
    worker.join(120)
    assert len(vector) == e5.dim and query_done_first

"""Vectors after keywords: batch by batch, resumable after a stop, an error or a crash, never completed
with a vector missing, and waiting for questions."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.background import BackgroundEmbedder
from rag.ingest.ingestor import Ingestor
from rag.ingest.vector_fill import fill_vectors
from rag.models.embedding_router import EmbedderRouter
from rag.models.priority import Priority
from tests import fixtures
from tests.fakes import HashEmbedding

SOON = 30.0
SMALL_CHUNKS = {"chunking.chunk_size": "40", "chunking.chunk_overlap": "0"}  # a short PDF makes many batches


@pytest.fixture
def config(config: RagConfig) -> RagConfig:
    return config.with_overrides(SMALL_CHUNKS)


class CountingEmbedding(HashEmbedding):
    """Hash vectors; counts the texts it embeds, can fail from the ``fail_after``-th call on, and can be
    held inside a call until ``release`` is set (``entered`` tells the test it is in)."""

    texts: int = 0
    calls: int = 0
    fail_after: int = 0  # 0: never

    def model_post_init(self, context) -> None:
        self._entered, self._release = threading.Event(), threading.Event()
        self._release.set()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail_after and self.calls >= self.fail_after:
            raise RuntimeError("the embedder broke")
        self._entered.set()
        assert self._release.wait(SOON)
        self.texts += len(texts)
        return super()._get_text_embeddings(texts)


@pytest.fixture
def embedder() -> CountingEmbedding:
    return CountingEmbedding(model_id="counting")


@pytest.fixture
def counted_store(config: RagConfig, embedder: CountingEmbedding):
    store = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: embedder))
    yield store
    store.close()


def _searchable(store: DocumentStore, config: RagConfig, tmp_path: Path) -> str:
    """A PDF ingested up to its keywords (the background embedder is told nothing)."""
    class Nobody:
        def submit(self, doc_id, progress=None):
            return progress

    result = Ingestor(store, config, background=Nobody()).ingest_path(fixtures.make_english_pdf(tmp_path, pages=4))
    assert result.status == "searchable" and not result.error
    return result.doc_id


def test_every_batch_is_stored_as_soon_as_it_is_embedded(counted_store: DocumentStore, config: RagConfig,
                                                         embedder: CountingEmbedding, tmp_path: Path) -> None:
    doc_id = _searchable(counted_store, config, tmp_path)
    total = counted_store.document(doc_id).chunks
    seen = []

    class Watch:
        def stage(self, *a, **k): pass
        def advance(self, done, **k): seen.append((done, counted_store.vectors.count()))

    result = fill_vectors(counted_store, doc_id, batch_size=1, store_every=2, progress=Watch())
    assert result.status == "completed" and result.embedded == total and embedder.calls == total  # one by one
    assert seen == [(min(n, total), min(n, total)) for n in range(2, total + 2, 2)]  # stored two at a time
    assert counted_store.document(doc_id).status == "completed" and embedder.texts == total


def test_a_stopped_document_resumes_with_only_what_is_missing(counted_store: DocumentStore, config: RagConfig,
                                                              embedder: CountingEmbedding, tmp_path: Path) -> None:
    doc_id = _searchable(counted_store, config, tmp_path)
    total = counted_store.document(doc_id).chunks
    assert total >= 4
    stop = threading.Event()

    class StopAfterTwo:
        def stage(self, *a, **k): pass
        def advance(self, done, **k):
            if done >= 2:
                stop.set()

    first = fill_vectors(counted_store, doc_id, batch_size=1, store_every=1, progress=StopAfterTwo(), stop=stop)
    assert first.status == "stopped" and first.embedded == 2
    assert counted_store.document(doc_id).status == "embedding"

    second = fill_vectors(counted_store, doc_id, batch_size=1)
    assert second.status == "completed" and second.computed == total - 2
    assert embedder.texts == total  # nothing embedded twice
    assert counted_store.vectors.count() == total


def test_an_embedding_error_keeps_the_document_keyword_searchable(counted_store: DocumentStore, config: RagConfig,
                                                                  embedder: CountingEmbedding, tmp_path: Path) -> None:
    doc_id = _searchable(counted_store, config, tmp_path)
    embedder.fail_after = 2
    result = fill_vectors(counted_store, doc_id, batch_size=1, store_every=1)
    assert result.status == "failed" and "the embedder broke" in result.error
    assert counted_store.document(doc_id).status == "embedding"  # not completed, not failed, not purged
    [partial] = counted_store.keyword_only()
    assert partial.embedded == 1 and "the embedder broke" in partial.error
    assert counted_store.keywords.search(fixtures.EN_FACT, 3)[0].doc_id == doc_id

    embedder.fail_after = 0  # fixed: one more run completes it
    assert fill_vectors(counted_store, doc_id).status == "completed"
    assert counted_store.keyword_only() == []


def test_a_batch_waits_while_a_question_is_in_flight(counted_store: DocumentStore, config: RagConfig,
                                                     embedder: CountingEmbedding, tmp_path: Path) -> None:
    doc_id = _searchable(counted_store, config, tmp_path)
    priority = Priority(grace_s=0.0)
    done = threading.Event()
    with priority.foreground():
        worker = threading.Thread(target=lambda: (fill_vectors(counted_store, doc_id, priority=priority), done.set()))
        worker.start()
        assert not done.wait(0.3)
        assert embedder.calls == 0  # not one batch was embedded while the question ran
    assert done.wait(SOON)
    assert counted_store.document(doc_id).status == "completed"


def test_delete_while_embedding(counted_store: DocumentStore, config: RagConfig, embedder: CountingEmbedding,
                                tmp_path: Path) -> None:
    doc_id = _searchable(counted_store, config, tmp_path)
    background = BackgroundEmbedder(counted_store, batch_size=1, resume=False, priority=Priority(grace_s=0.0))
    try:
        embedder._release.clear()
        background.submit(doc_id)
        assert embedder._entered.wait(SOON)  # a batch is being embedded
        counted_store.delete(doc_id)
        embedder._release.set()
        background.wait(doc_id, timeout=SOON)
        assert background.result(doc_id).status == "gone"
        assert counted_store.vectors.count() == 0 and len(counted_store.keywords) == 0
        assert counted_store.documents() == [] and counted_store.ledger.get(doc_id) is None
    finally:
        embedder._release.set()
        background.close()


def test_restart_resumes_what_was_left_embedding(config: RagConfig, tmp_path: Path) -> None:
    first = CountingEmbedding(model_id="counting")
    store = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: first))
    doc_id = _searchable(store, config, tmp_path)
    total = store.document(doc_id).chunks
    first.fail_after = 2  # the embedder dies after one batch, before anything is stored in Chroma
    fill_vectors(store, doc_id, batch_size=1)
    assert store.vectors.count() == 0
    store.close()

    again = CountingEmbedding(model_id="counting")
    reopened = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: again))
    try:
        assert reopened.document(doc_id).status == "embedding"  # recovery kept it: still keyword-searchable
        assert reopened.keywords.search(fixtures.EN_FACT, 3)[0].doc_id == doc_id
        background = BackgroundEmbedder(reopened, batch_size=1)  # resumes by itself
        background.wait(timeout=SOON)
        background.close()
        assert reopened.document(doc_id).status == "completed"
        # the chunk embedded before the failure came from the embedding cache: nothing is computed twice
        assert again.texts == total - 1 and reopened.vectors.count() == total
    finally:
        reopened.close()


CRASHING_CHILD = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from rag.config import RagConfig
    from rag.index.store import DocumentStore
    from rag.ingest.ingestor import Ingestor
    from rag.ingest.vector_fill import fill_vectors
    from rag.models.embedding_router import EmbedderRouter
    from tests.fakes import HashEmbedding

    class Nobody:
        def submit(self, doc_id, progress=None):
            return progress

    class DiesOnThirdBatch(HashEmbedding):
        calls: int = 0
        def _get_text_embeddings(self, texts):
            self.calls += 1
            if self.calls == 3:
                os._exit(9)  # a hard crash: no clean-up of any kind
            return super()._get_text_embeddings(texts)

    config = RagConfig().with_overrides({"storage.data_dir": sys.argv[1], "chunking.chunk_size": "40",
                                         "chunking.chunk_overlap": "0"})
    embedder = DiesOnThirdBatch(model_id="counting")
    store = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: embedder))
    result = Ingestor(store, config, background=Nobody()).ingest_path(Path(sys.argv[2]))
    fill_vectors(store, result.doc_id, batch_size=1, store_every=1)
""")


def test_a_crash_mid_embedding_never_leaves_a_completed_document_with_missing_vectors(config: RagConfig,
                                                                                      tmp_path: Path) -> None:
    pdf = fixtures.make_english_pdf(tmp_path, pages=4)
    root = Path(__file__).resolve().parents[3]
    child = subprocess.run([sys.executable, "-c", CRASHING_CHILD, config.storage.data_dir, str(pdf)], cwd=root,
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 9, child.stderr

    embedder = CountingEmbedding(model_id="counting")
    store = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: embedder))
    try:
        [record] = store.documents()
        assert record.status == "embedding"
        stored = store.vectors.count()
        assert stored == 2 and store.ledger.get(record.doc_id).embedded <= stored < record.chunks
        assert store.keywords.search(fixtures.EN_FACT, 3)[0].doc_id == record.doc_id
        assert fill_vectors(store, record.doc_id).status == "completed"
        assert store.vectors.count() == record.chunks and embedder.texts == record.chunks - stored
    finally:
        store.close()


def test_re_index_while_embedding_embeds_the_new_chunks(counted_store: DocumentStore, config: RagConfig,
                                                        embedder: CountingEmbedding, tmp_path: Path) -> None:
    doc_id = _searchable(counted_store, config, tmp_path)
    background = BackgroundEmbedder(counted_store, batch_size=1, resume=False, priority=Priority(grace_s=0.0))
    try:
        embedder._release.clear()
        background.submit(doc_id)
        assert embedder._entered.wait(SOON)  # a batch of the old chunks is being embedded
        coarser = config.with_overrides({"chunking.chunk_size": "80"})
        reindexed = Ingestor(counted_store, coarser, background=background).reindex(doc_id)
        assert reindexed.status == "searchable"
        embedder._release.set()
        background.wait(doc_id, timeout=SOON)
        record = counted_store.document(doc_id)
        assert record.status == "completed" and record.chunks == reindexed.chunks
        assert counted_store.vectors.count() == reindexed.chunks  # the new chunks, none of the old
        assert not counted_store.vectors.get("counting", [f"{doc_id}:{reindexed.chunks:05d}"])
    finally:
        embedder._release.set()
        background.close()

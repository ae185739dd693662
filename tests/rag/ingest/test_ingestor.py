"""Ingestion end to end with real PyMuPDF and real embedded Chroma; embeddings are a fast fake."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from rag.index.store import INTERRUPTED, DocumentStore
from tests import fixtures


@pytest.fixture
def ingestor(store: DocumentStore, config: RagConfig) -> Ingestor:
    return Ingestor(store, config)


def test_pdf_is_parsed_chunked_embedded_and_stored(ingestor: Ingestor, store: DocumentStore,
                                                   tmp_path: Path) -> None:
    path = fixtures.make_english_pdf(tmp_path)
    result = ingestor.ingest_path(path)
    assert result.ok, result.error
    assert result.pages == 3 and result.chunks > 0 and result.language == "en"
    assert set(result.timings) == {"parse", "chunk", "keywords", "searchable", "embed"}

    record = store.document(result.doc_id)
    assert record.status == "completed" and record.chunks == result.chunks
    chunks = store.chunks(result.doc_id)
    assert len(chunks) == result.chunks and [c.index for c in chunks] == list(range(len(chunks)))
    assert all(1 <= c.page_start <= c.page_end <= 3 for c in chunks)
    # every English chunk has a vector in the English model's space and one in the second model's
    ids = {c.chunk_id for c in chunks}
    assert store.vectors.model_ids() == ["hash-e5-small", "hash-minilm"]
    for model_id in ("hash-minilm", "hash-e5-small"):
        assert store.vectors.count(model_id) == result.chunks
        assert store.vectors.chunk_ids_by_doc(model_id) == {result.doc_id: ids}
    assert store.vectors.count() == 2 * result.chunks and len(store.keywords) == result.chunks
    pages = store.pages(result.doc_id)
    assert [p.number for p in pages] == [1, 2, 3]
    word = pages[0].words[0]
    assert pages[0].text[word.start:word.end] == word.text
    assert Path(record.stored_path).read_bytes() == path.read_bytes()


def test_chinese_pdf_goes_to_the_chinese_embedder(ingestor: Ingestor, store: DocumentStore,
                                                  tmp_path: Path) -> None:
    result = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path))
    assert result.ok, result.error
    assert result.language == "zh"
    assert store.vectors.model_ids() == ["hash-e5-small"]  # not the English models: one vector per chunk
    assert store.vectors.count("hash-e5-small") == result.chunks and store.vectors.count() == result.chunks
    assert store.vectors.chunk_ids_by_doc("hash-e5-small") == {
        result.doc_id: {c.chunk_id for c in store.chunks(result.doc_id)}}
    assert store.keywords.search("布洛芬", k=3)


def test_without_a_second_model_english_chunks_get_one_vector(config: RagConfig, tmp_path: Path) -> None:
    from dataclasses import replace

    from rag.models.embedding_router import EmbedderRouter
    from tests.fakes import HashEmbedding

    off = replace(config, embedding=replace(config.embedding, second_english_model=""))
    store = DocumentStore(off, EmbedderRouter(off.embedding, lambda spec: HashEmbedding(
        model_id=f"hash-{spec.split(':')[-1]}")))
    try:
        result = Ingestor(store, off).ingest_path(fixtures.make_english_pdf(tmp_path))
        assert result.status == "completed", result.error
        assert store.vectors.model_ids() == ["hash-minilm"] and store.vectors.count() == result.chunks
    finally:
        store.close()


def test_duplicate_is_reported_not_stored_twice(ingestor: Ingestor, store: DocumentStore, tmp_path: Path) -> None:
    path = fixtures.make_english_pdf(tmp_path)
    first = ingestor.ingest_path(path)
    renamed = tmp_path / "copy.pdf"
    renamed.write_bytes(path.read_bytes())
    second = ingestor.ingest_path(renamed)
    assert second.status == "duplicate" and second.doc_id == first.doc_id
    assert "already stored" in second.error and "report.pdf" in second.error
    assert len(store.documents()) == 1 and len(store.keywords) == first.chunks
    assert store.vectors.count("hash-minilm") == first.chunks and store.vectors.count("hash-e5-small") == first.chunks


@pytest.mark.parametrize(
    ("maker", "message"),
    [
        (fixtures.make_corrupt_pdf, "corrupt"),
        (fixtures.make_encrypted_pdf, "password"),
        (fixtures.make_zero_page_pdf, "no pages"),
        (fixtures.make_image_only_pdf, "no extractable text"),
        (fixtures.make_fake_pdf, "not a PDF"),
    ],
    ids=["corrupt", "encrypted", "zero-page", "image-only", "renamed-non-pdf"],
)
def test_bad_pdfs_fail_clearly_and_lose_nothing(ingestor: Ingestor, store: DocumentStore, tmp_path: Path,
                                                maker, message: str) -> None:
    good = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    before = (store.vectors.count(), len(store.keywords))

    result = ingestor.ingest_path(maker(tmp_path))
    assert result.status == "failed"
    assert message.lower() in result.error.lower()
    record = store.document(result.doc_id)
    assert record.status == "failed" and record.error == result.error
    assert (store.vectors.count(), len(store.keywords)) == before
    assert store.document(good.doc_id).status == "completed"


@pytest.mark.parametrize("name", ["../evil.pdf", "a/b.pdf", "x\\y.pdf", "<script>alert(1)</script>.pdf"])
def test_dangerous_file_names_are_refused(ingestor: Ingestor, store: DocumentStore, name: str) -> None:
    result = ingestor.ingest_bytes(b"%PDF-1.4 whatever", name)
    assert result.status == "failed" and name in result.error
    assert store.documents() == []
    assert not store.files_dir.exists() or not any(store.files_dir.rglob("*"))


def test_file_over_the_size_limit_is_refused(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    small_limit = config.with_overrides({"storage.max_file_mb": "0.001"})
    result = Ingestor(store, small_limit).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert result.status == "failed" and "storage.max_file_mb" in result.error
    assert store.documents() == []


def test_delete_removes_everything(ingestor: Ingestor, store: DocumentStore, tmp_path: Path) -> None:
    keep = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path))
    gone = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    store.delete(gone.doc_id)
    assert [r.doc_id for r in store.documents()] == [keep.doc_id]
    assert store.vectors.count() == keep.chunks and len(store.keywords) == keep.chunks
    assert not store.document_dir(gone.doc_id).exists()
    with pytest.raises(KeyError):
        store.delete(gone.doc_id)


def test_reindex_applies_the_current_chunking(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    smaller = config.with_overrides({"chunking.chunk_size": "40", "chunking.chunk_overlap": "5"})
    again = Ingestor(store, smaller).reindex(result.doc_id)
    assert again.ok and again.chunks > result.chunks
    assert store.vectors.count("hash-minilm") == again.chunks and store.vectors.count("hash-e5-small") == again.chunks
    assert store.vectors.count() == 2 * again.chunks and len(store.keywords) == again.chunks


def test_cached_embeddings_make_reingest_free(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    ingestor = Ingestor(store, config)
    result = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    misses = store.cache.misses
    ingestor.reindex(result.doc_id)
    assert store.cache.misses == misses and store.cache.hits >= result.chunks


def test_docx_markdown_html_and_txt_are_ingested(ingestor: Ingestor, tmp_path: Path) -> None:
    for maker in (fixtures.make_docx, fixtures.make_markdown, fixtures.make_html, fixtures.make_txt):
        result = ingestor.ingest_path(maker(tmp_path))
        assert result.ok, (maker.__name__, result.error)


def test_llm_metadata_is_stored_when_enabled(store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    from tests.fakes import ScriptedLLM

    llm = ScriptedLLM(replies=['Sure! ```json\n{"summary": "A report.", "keywords": ["fever", "dose"], '
                               '"topics": ["medicine"], "key_phrases": ["daily dose"]}\n```'])
    enabled = config.with_overrides({"metadata.enabled": "true"})
    result = Ingestor(store, enabled, metadata_llm=llm).ingest_path(fixtures.make_english_pdf(tmp_path))
    record = store.document(result.doc_id)
    assert (record.summary, record.keywords, record.topics) == ("A report.", "fever, dose", "medicine")


def test_a_process_killed_mid_ingest_leaves_a_consistent_store(config: RagConfig, tmp_path: Path) -> None:
    """The child dies after writing vectors but before BM25; reopening marks the document failed."""
    pdf = fixtures.make_english_pdf(tmp_path)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})
        from dataclasses import replace
        from rag.config import RagConfig
        from rag.models.embedding_router import EmbedderRouter
        from rag.ingest.ingestor import Ingestor
        from rag.index.keywords import KeywordIndex
        from rag.index.store import DocumentStore
        from tests.fakes import HashEmbedding
        base = RagConfig()
        config = replace(base, storage=replace(base.storage, data_dir={config.storage.data_dir!r}))
        router = EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id="hash-" + spec[-5:]))
        store = DocumentStore(config, router)
        KeywordIndex.add_many = lambda *a, **k: os._exit(9)
        Ingestor(store, config).ingest_path({str(pdf)!r})
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 9, completed.stderr

    from rag.models.embedding_router import EmbedderRouter
    from tests.fakes import HashEmbedding

    router = EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id="hash-" + spec[-5:]))
    reopened = DocumentStore(config, router)
    [record] = reopened.documents()
    assert record.status == "failed" and record.error == INTERRUPTED
    assert reopened.vectors.count() == 0 and len(reopened.keywords) == 0
    again = Ingestor(reopened, config).ingest_path(pdf)
    assert again.ok and reopened.document(again.doc_id).status == "completed"

"""Real PDFs through the real ingest and engine: PyMuPDF, the bundled embedders, embedded Chroma and bm25s."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from rag.runtime import build_engine
from rag.runtime import build_router
from rag.index.store import DocumentStore
from tests import fixtures
from tests.conftest import SHARED_DATA, needs_shared_data

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def real_router():
    return build_router(RagConfig())


@pytest.fixture
def real_store(config: RagConfig, real_router):
    store = DocumentStore(config, real_router)
    yield store
    store.close()


def test_generated_pdfs_are_searchable_with_the_bundled_models(real_store: DocumentStore, config: RagConfig,
                                                               tmp_path: Path) -> None:
    ingestor = Ingestor(real_store, config)
    english = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    chinese = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path))
    assert english.ok and chinese.ok, (english.error, chinese.error)
    english_model = real_store.router.for_language("en").model_id  # the tuned MiniLM, or the stock one standing in
    assert real_store.vectors.model_ids() == sorted(["me5-small-q4", english_model])

    engine = build_engine(config, store=real_store, with_llm=False)
    hits = engine.search(fixtures.EN_FACT).nodes
    assert hits[0].node.metadata["doc_id"] == english.doc_id
    assert fixtures.EN_FACT.split()[1] in hits[0].node.get_content()
    zh_hits = engine.search("布洛芬每日最大剂量是多少？", doc_ids=[chinese.doc_id]).nodes
    assert "1200" in zh_hits[0].node.get_content()


@needs_shared_data()
@pytest.mark.slow
def test_shared_pdfs_ingest_in_both_languages(real_store: DocumentStore, config: RagConfig) -> None:
    ingestor = Ingestor(real_store, config)
    english = ingestor.ingest_path(SHARED_DATA / "pdfs" / "en" / "emnlp2023_query-rewriting-rag_2023.emnlp-main.322.pdf")
    chinese = ingestor.ingest_path(
        SHARED_DATA / "pdfs" / "zh" / "datawhale_llm-universe_case1_personal-kb-assistant.pdf")
    assert english.ok and english.pages == 13 and english.language == "en", english.error
    assert chinese.ok and chinese.pages == 18 and chinese.language == "zh", chinese.error

    engine = build_engine(config, store=real_store, with_llm=False)
    result = engine.search("query rewriting for retrieval-augmented large language models", doc_ids=[english.doc_id])
    assert result.nodes and result.nodes[0].node.metadata["page_start"] <= 13
    zh = engine.search("个人知识库助手的项目架构", doc_ids=[chinese.doc_id])
    assert zh.nodes and zh.nodes[0].node.metadata["language"] == "zh"
    pages = real_store.pages(chinese.doc_id)
    assert len(pages) == 18 and all(p.text[w.start:w.end] == w.text for p in pages for w in p.words[:50])

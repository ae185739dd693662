"""The default bundled model (Qwen2.5 1.5B) end to end: ask → verified answer with a citation on the right
page → abstention on a question whose document is in the library but does not hold the answer.

Kept small for CI (two questions, answers capped at 48 tokens, 2,048-token context): about 1-2 minutes
on 2 idle cores.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.answer.llm_runner import LLMRunner
from rag.config import DEFAULT_HOME, RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.models.assets import DEFAULT_GGUF_MODEL
from rag.models.llms import load_embedded_llm
from rag.runtime import build_engine, build_router
from tests import fixtures

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("answer_default")
    base = RagConfig()
    assert base.llm.embedded_model == DEFAULT_GGUF_MODEL == "qwen2.5-1.5b-instruct"
    config = replace(base, storage=replace(base.storage, data_dir=str(tmp / "data")),
                     chunking=replace(base.chunking, chunk_size=80, chunk_overlap=10),
                     generation=replace(base.generation, max_answer_tokens=48, temperature=0.0)).validate()
    store = DocumentStore(config, build_router(config))
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp))
    assert result.ok, result.error
    llm = load_embedded_llm(replace(config.llm, n_ctx=2048), config.generation, DEFAULT_HOME)
    engine = build_engine(config, store=store, llm=LLMRunner(llm))
    yield engine, result.doc_id
    store.close()


def test_the_default_model_gives_a_verified_answer_citing_the_right_page(world) -> None:
    engine, doc_id = world
    result = engine.answer("What is the maximum daily dose of ibuprofen for adults?")
    assert not result.error and not result.abstained, result.to_dict()
    assert "1200" in result.answer
    assert any(c.doc_id == doc_id and c.page == 2 and c.highlights for c in result.citations), result.to_dict()
    assert result.verification and all(c["supported"] for c in result.verification), result.verification
    assert any(c["p_yes"] is not None for c in result.verification)  # the model itself checked the claim
    assert result.timings["ttft_ms"] > 0 and "verify_ms" in result.timings


def test_the_default_model_abstains_when_the_document_does_not_hold_the_answer(world) -> None:
    engine, _ = world
    # the report is about this study, but never says when it was published
    result = engine.answer("In which year was the ibuprofen dosage study published?")
    assert not result.error, result.error
    assert result.abstained, result.to_dict()
    assert not result.citations

"""Document metadata written by the real bundled 0.5B Qwen model at ingest."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import DEFAULT_HOME, GenerationConfig, LLMConfig, RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from tests import fixtures

pytestmark = pytest.mark.integration

SMALL_LLM = "qwen2.5-0.5b-instruct"


@pytest.fixture(scope="module")
def small_llm():
    from rag.models.llms import build_llm

    # one thread: on a shared 2-core machine llama.cpp's spinning 2-thread pool is several times slower
    handle = build_llm(LLMConfig(embedded_model=SMALL_LLM, n_ctx=2048, n_threads=1),
                       GenerationConfig(max_answer_tokens=320, temperature=0.0), DEFAULT_HOME)
    assert handle.backend_used == "embedded" and handle.model_name == SMALL_LLM
    return handle.llm


def test_ingest_with_metadata_on_stores_the_models_summary_and_keywords(store: DocumentStore, config: RagConfig,
                                                                        tmp_path: Path, small_llm) -> None:
    enabled = config.with_overrides({"metadata.enabled": "true"})
    result = Ingestor(store, enabled, metadata_llm=small_llm).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert result.ok, result.error
    record = store.document(result.doc_id)
    assert not record.notes, record.notes
    assert len(record.summary) > 20 and record.keywords
    described = f"{record.summary} {record.keywords} {record.topics} {record.key_phrases}".lower()
    assert any(word in described for word in ("ibuprofen", "dose", "dosage", "headache", "clinical"))
    print(f"metadata in {result.timings['metadata']:.1f} s: {record.summary!r} | {record.keywords!r}")

"""One context budget: the pipeline fits sources with the answering LLM's own token counter."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rag.config import RagConfig
from rag.answer.engine import AnswerEngine
from rag.ingest.ingestor import Ingestor
from rag.retrieval.pipeline import RetrievalPipeline
from tests import fixtures
from tests.fakes import ScriptedLLM

EN_Q = "What is the maximum daily dose of ibuprofen for adults?"


class CountingLLM(ScriptedLLM):
    """A scripted LLM whose 'tokenizer' counts characters, very unlike words."""

    def count_tokens(self, text: str) -> int:
        return len(text)


def test_pipeline_budget_is_counted_with_the_given_counter(store, config: RagConfig, tmp_path: Path) -> None:
    config = replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                     generation=replace(config.generation, max_context_tokens=400)).validate()
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    words = RetrievalPipeline(store).retrieve(EN_Q, config)
    chars = RetrievalPipeline(store, count_tokens=len).retrieve(EN_Q, config)
    assert sum(len(n.node.get_content()) for n in chars.nodes) <= 400
    assert sum(len(n.node.get_content()) for n in words.nodes) > 400  # 400 words hold far more characters
    assert len(chars.nodes) < len(words.nodes)


def test_engine_gives_the_pipeline_its_llms_counter_and_keeps_what_the_pipeline_fitted(
        store, config: RagConfig, tmp_path: Path) -> None:
    config = replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                     generation=replace(config.generation, max_context_tokens=400, answer_check=False)).validate()
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    llm = CountingLLM(replies=["1200 milligrams [1]."])
    pipeline = RetrievalPipeline(store)
    engine = AnswerEngine(pipeline, store, llm)
    assert pipeline.count_tokens == llm.count_tokens
    stream = engine.stream(EN_Q, config)
    fitted = [n.node.get_content() for n in stream.retrieval.nodes]
    assert [s.text for s in stream.sources] == fitted  # the engine did not cut again in another unit
    assert sum(len(t) for t in fitted) <= 400

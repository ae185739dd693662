"""One context budget: context fitting counts with the answering LLM's own token counter."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from tests import fixtures
from rag.retrieval.assembly import build_retrieval
from rag.retrieval.query import SearchQuery
from tests.fakes import ScriptedLLM, make_engine

EN_Q = "What is the maximum daily dose of ibuprofen for adults?"


class CountingLLM(ScriptedLLM):
    """A scripted LLM whose 'tokenizer' counts characters, very unlike words."""

    def count_tokens(self, text: str) -> int:
        return len(text)


def test_context_budget_is_counted_with_the_given_counter(store, config: RagConfig, tmp_path: Path) -> None:
    config = replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                     generation=replace(config.generation, max_context_tokens=400)).validate()
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    words = build_retrieval(config, store).run(SearchQuery(query_str=EN_Q))
    chars = build_retrieval(config, store, count_tokens=len).run(SearchQuery(query_str=EN_Q))
    assert sum(len(n.node.get_content()) for n in chars) <= 400
    assert sum(len(n.node.get_content()) for n in words) > 400  # 400 words hold far more characters
    assert len(chars) < len(words)


def test_the_engine_fits_with_its_llms_counter_and_numbers_exactly_what_was_fitted(
        store, config: RagConfig, tmp_path: Path) -> None:
    config = replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                     generation=replace(config.generation, max_context_tokens=400, answer_check=False)).validate()
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    llm = CountingLLM(replies=["1200 milligrams [1]."])
    engine = make_engine(store, config, llm)
    stream = engine.stream(EN_Q)
    fitted = [n.node.get_content() for n in stream.retrieval.nodes]
    assert [s.text for s in stream.sources] == fitted  # the engine did not cut again in another unit
    assert sum(len(t) for t in fitted) <= 400

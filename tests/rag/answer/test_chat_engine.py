"""The llama-index APIs of the one engine: ``query()`` and the chat engine (real store, scripted LLM)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.chat_engine.types import BaseChatEngine, StreamingAgentChatResponse
from llama_index.core.schema import NodeWithScore

from rag.config import RagConfig
from rag.answer.chat_engine import CitewiseChatEngine
from rag.ingest.ingestor import Ingestor
from tests import fixtures
from tests.fakes import ScriptedLLM, make_engine

EN_Q = "What is the maximum daily dose of ibuprofen for adults?"
ANSWER = "Adults may take at most 1200 milligrams a day [1]."


@pytest.fixture
def setup(store, config: RagConfig, tmp_path: Path):
    config = replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                     generation=replace(config.generation, answer_check=False)).validate()
    result = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path))
    assert result.ok, result.error
    return store, config, result.doc_id


def _engine(store, llm, config, **options):
    return make_engine(store, config, llm, **options)


def test_query_engine_returns_a_response_with_source_nodes_and_the_result(setup) -> None:
    store, config, doc_id = setup
    engine = _engine(store, ScriptedLLM(replies=[ANSWER]), config)
    assert isinstance(engine, BaseQueryEngine)
    response = engine.query(EN_Q)
    assert isinstance(response, Response) and response.response == ANSWER
    assert response.source_nodes and all(isinstance(n, NodeWithScore) for n in response.source_nodes)
    first = response.source_nodes[0].node
    assert first.metadata["n"] == 1 and first.metadata["doc_id"] == doc_id and first.metadata["file_name"] == "report.pdf"
    result = response.metadata["result"]
    assert first.node_id == result.sources[0].chunk_id
    assert response.metadata["citations"] and response.metadata["citations"][0].n == 1
    assert response.metadata["abstained"] is False


def test_streaming_query_engine_gives_sources_first_then_tokens_then_the_result(setup) -> None:
    store, config, _ = setup
    engine = _engine(store, ScriptedLLM(replies=[ANSWER]), config, streaming=True)
    response = engine.query(EN_Q)
    assert isinstance(response, StreamingResponse) and response.source_nodes
    assert "result" not in response.metadata
    tokens = list(response.response_gen)
    assert len(tokens) > 1 and "".join(tokens) == ANSWER
    assert response.metadata["result"].answer == ANSWER


def test_chat_engine_condenses_follow_ups_with_its_history(setup) -> None:
    store, config, _ = setup
    follow_up = "What is the maximum daily dose of ibuprofen for children?"
    llm = ScriptedLLM(replies=[ANSWER, "yes", follow_up, "It is 1200 milligrams [1]."])
    chat = CitewiseChatEngine(_engine(store, llm, config))
    assert isinstance(chat, BaseChatEngine)
    first = chat.chat(EN_Q)
    assert first.response == ANSWER and first.source_nodes
    assert [m.role for m in chat.chat_history] == [MessageRole.USER, MessageRole.ASSISTANT]
    second = chat.chat("And for children?")
    condense = llm.prompts[2]  # after the first answer and its claim's verification
    assert "And for children?" in condense and ANSWER in condense  # the condense prompt saw the history
    assert chat.last_result.standalone_question == follow_up
    assert second.response == "It is 1200 milligrams [1]." and len(chat.chat_history) == 4
    chat.reset()
    assert chat.chat_history == [] and chat.last_result is None


def test_stream_chat_returns_a_streaming_agent_chat_response_and_writes_history(setup) -> None:
    store, config, _ = setup
    chat = CitewiseChatEngine(_engine(store, ScriptedLLM(replies=[ANSWER]), config))
    response = chat.stream_chat(EN_Q)
    assert isinstance(response, StreamingAgentChatResponse)
    assert response.source_nodes and chat.chat_history == []  # sources before any token
    assert "".join(response.response_gen) == ANSWER and response.response == ANSWER
    assert chat.chat_history[-1].content == ANSWER and chat.last_result.citations


def test_async_chat_and_stream_chat(setup) -> None:
    store, config, _ = setup
    chat = CitewiseChatEngine(_engine(store, ScriptedLLM(replies=[ANSWER]), config))

    async def run() -> tuple[str, str]:
        first = await chat.achat(EN_Q)
        streamed = await chat.astream_chat(EN_Q, chat_history=[])
        text = "".join([token async for token in streamed.async_response_gen()])
        return first.response, text

    first, text = asyncio.run(run())
    assert first == ANSWER and text == ANSWER
    assert [m.content for m in chat.chat_history] == [EN_Q, ANSWER]


def test_chat_history_passed_in_replaces_the_engines(setup) -> None:
    store, config, _ = setup
    llm = ScriptedLLM(replies=[EN_Q, ANSWER])
    chat = CitewiseChatEngine(_engine(store, llm, config))
    history = [ChatMessage(role=MessageRole.USER, content="Tell me about the ibuprofen study."),
               ChatMessage(role=MessageRole.ASSISTANT, content="It tested ibuprofen [1].")]
    chat.chat("And the maximum dose?", chat_history=history)
    assert "Tell me about the ibuprofen study." in llm.prompts[0]
    assert len(chat.chat_history) == 4

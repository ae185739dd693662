"""LlamaIndex query and chat engines over ``AnswerEngine``: thin adapters, no logic of their own.

``CitewiseQueryEngine`` is a ``CustomQueryEngine`` (``query()`` returns a ``Response``, or a
``StreamingResponse`` with ``streaming=True``) and ``CitewiseChatEngine`` a ``BaseChatEngine``
(``chat``, ``stream_chat`` returning ``StreamingAgentChatResponse``, their async forms, and a chat
history that condenses follow-ups). Both delegate to ``AnswerEngine`` — retrieval pipeline, numbered
sources, answerability gate, streamed answer, reflection, citations, highlights, groundedness — and
expose its sources as ``NodeWithScore`` (the node id is the chunk id; ``metadata`` has ``n``,
``doc_id``, ``file_name``, ``page_start``, ``page_end``). The full ``AnswerResult`` is in
``metadata["result"]`` of a ``Response`` (after a streamed response is consumed) and in
``last_result`` of the chat engine.

Reflection is the engine's post-answer step (``rag.retrieval.reflection``, on when ``reflection.enabled``): it
grades the finished answer and may re-retrieve, so it cannot be a llama-index node postprocessor,
which only sees nodes before an answer exists. Its rounds are in ``metadata["reflection"]``.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Iterator, Sequence

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.chat_engine.types import AgentChatResponse, BaseChatEngine, StreamingAgentChatResponse
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from rag.answer.types import AnswerResult, ChatTurn, Source
from rag.answer.stream import AnswerStream
from rag.config import RagConfig


def source_nodes(sources: Sequence[Source]) -> list[NodeWithScore]:
    """The numbered sources as llama-index nodes (id = chunk id, the source number in metadata)."""
    return [NodeWithScore(node=TextNode(id_=s.chunk_id, text=s.text, metadata={
        "n": s.n, "doc_id": s.doc_id, "file_name": s.file_name, "page_start": s.page_start,
        "page_end": s.page_end}), score=s.score) for s in sources]


def result_metadata(result: AnswerResult) -> dict[str, Any]:
    return {"result": result, "abstained": result.abstained, "citations": result.citations,
            "reflection": result.reflection, "groundedness": result.groundedness, "timings": result.timings,
            "error": result.error, "fallback_reason": result.fallback_reason}


class CitewiseQueryEngine(CustomQueryEngine):
    """``engine.query("...")`` over our pipeline.

    Args:
        engine: The ``AnswerEngine``.
        config: Settings for every query.
        doc_ids: Restrict to these documents. Defaults to all.
        streaming: Return a ``StreamingResponse`` (sources at once, tokens as they come). Defaults to False.
    """

    engine: Any
    config: Any
    doc_ids: list[str] | None = None
    streaming: bool = False

    def custom_query(self, query_str: str) -> Response | StreamingResponse:
        stream = self.engine.stream(query_str, self.config, doc_ids=self.doc_ids)
        nodes = source_nodes(stream.sources)
        if not self.streaming:
            result = stream.result()
            return Response(response=result.answer, source_nodes=source_nodes(result.sources),
                            metadata=result_metadata(result))
        metadata: dict[str, Any] = {"answer_stream": stream}

        def tokens() -> Iterator[str]:
            yield from stream
            metadata.update(result_metadata(stream.result()))

        return StreamingResponse(response_gen=tokens(), source_nodes=nodes, metadata=metadata)


class CitewiseChatEngine(BaseChatEngine):
    """A chat over the documents: each message is condensed with the history, then answered and cited.

    Args:
        engine: The ``AnswerEngine``.
        config: Settings for every turn.
        doc_ids: Restrict to these documents. Defaults to all.
        use_knowledge_base: False answers without the documents. Defaults to True.
        search_mode: "always" or "auto" (see ``AnswerEngine``). Defaults to the engine's.
    """

    def __init__(self, engine: Any, config: RagConfig, *, doc_ids: Sequence[str] | None = None,
                 use_knowledge_base: bool = True, search_mode: str | None = None) -> None:
        self.engine = engine
        self.config = config
        self.doc_ids = list(doc_ids) if doc_ids is not None else None
        self.use_knowledge_base = use_knowledge_base
        self.search_mode = search_mode
        self._history: list[ChatMessage] = []
        self.last_result: AnswerResult | None = None

    @property
    def chat_history(self) -> list[ChatMessage]:
        return list(self._history)

    def reset(self) -> None:
        self._history = []
        self.last_result = None

    def _stream(self, message: str, chat_history: list[ChatMessage] | None) -> AnswerStream:
        if chat_history is not None:
            self._history = list(chat_history)
        turns = [ChatTurn("assistant" if m.role == MessageRole.ASSISTANT else "user", m.content or "")
                 for m in self._history]
        return self.engine.stream(message, self.config, history=turns, doc_ids=self.doc_ids,
                                  use_knowledge_base=self.use_knowledge_base, search_mode=self.search_mode)

    def _remember(self, message: str, result: AnswerResult) -> None:
        self.last_result = result
        self._history += [ChatMessage(role=MessageRole.USER, content=message),
                          ChatMessage(role=MessageRole.ASSISTANT, content=result.answer)]

    def chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AgentChatResponse:
        result = self._stream(message, chat_history).result()
        self._remember(message, result)
        return AgentChatResponse(response=result.answer, source_nodes=source_nodes(result.sources),
                                 metadata=result_metadata(result))

    def stream_chat(self, message: str, chat_history: list[ChatMessage] | None = None
                    ) -> StreamingAgentChatResponse:
        stream = self._stream(message, chat_history)

        def chat_stream() -> Iterator[ChatResponse]:
            text = ""
            for delta in stream:
                text += delta
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)
            self._remember(message, stream.result())

        # is_writing_to_memory=False: the history is ours (written when the stream ends), so no thread
        return StreamingAgentChatResponse(chat_stream=chat_stream(), source_nodes=source_nodes(stream.sources),
                                          is_writing_to_memory=False)

    async def achat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AgentChatResponse:
        return await asyncio.to_thread(self.chat, message, chat_history)

    async def astream_chat(self, message: str, chat_history: list[ChatMessage] | None = None
                           ) -> StreamingAgentChatResponse:
        response = await asyncio.to_thread(self.stream_chat, message, chat_history)
        sync_stream = response.chat_stream
        response.chat_stream = None

        async def achat_stream() -> AsyncIterator[ChatResponse]:
            iterator = iter(sync_stream)
            sentinel = object()
            while True:  # each token is produced in a worker thread, so the event loop stays free
                item = await asyncio.to_thread(next, iterator, sentinel)
                if item is sentinel:
                    return
                yield item

        response.achat_stream = achat_stream()
        return response

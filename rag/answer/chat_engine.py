"""``CitewiseChatEngine``: a llama-index chat engine over ``CitewiseQueryEngine``.

``chat``, ``stream_chat`` (returning ``StreamingAgentChatResponse``), their async forms, and a chat history
that condenses follow-ups into standalone questions. Each message goes through the query engine's one
answering path; the sources are ``NodeWithScore`` (node id = chunk id) and the full ``AnswerResult`` of the
latest turn is ``last_result``.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Iterator, Sequence

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.chat_engine.types import AgentChatResponse, BaseChatEngine, StreamingAgentChatResponse

from rag.answer.engine import CitewiseQueryEngine, result_metadata, source_nodes
from rag.answer.stream import AnswerStream
from rag.answer.types import AnswerResult, ChatTurn


class CitewiseChatEngine(BaseChatEngine):
    """A chat over the documents: each message is condensed with the history, then answered and cited.

    Args:
        engine: The ``CitewiseQueryEngine``.
        doc_ids: Restrict to these documents. Defaults to all.
        use_knowledge_base: False answers without the documents. Defaults to True.
        search_mode: "always" or "auto" (see ``CitewiseQueryEngine``). Defaults to the engine's.
    """

    def __init__(self, engine: CitewiseQueryEngine, *, doc_ids: Sequence[str] | None = None,
                 use_knowledge_base: bool = True, search_mode: str | None = None) -> None:
        self.engine = engine
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
        return self.engine.stream(message, history=turns, doc_ids=self.doc_ids,
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

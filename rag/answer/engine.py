"""``CitewiseQueryEngine``: the one LlamaIndex query engine every question goes through.

Assembled once per configuration (``from_config``): a retrieval chain (retriever + postprocessors, see
``rag.retrieval.assembly``) over the store, and the answering LLM. Per request it takes the question,
the chat history (condensed into a standalone question), the document filter and whether to use the
knowledge base at all:

    condense → (route) → retrieve → fit evidence → number the sources → answerability gate
             → streamed draft → claims verified against their sources → citations with exact highlights
             → groundedness

``stream()`` does everything up to the first token synchronously, so ``AnswerStream.sources`` is ready
before any token; ``query()`` (llama-index's API) returns a ``Response`` or, with ``streaming=True``, a
``StreamingResponse``. The Chat page, Compare, ``python -m rag ask`` and ``eval-answers`` all call
``stream()``; ``CitewiseChatEngine`` wraps it as a llama-index chat engine.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from typing import Any, Iterator, Sequence

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.answer.citations import abstain_text, build_answer_messages, sources_from_nodes
from rag.answer.gate import Verdict, check_messages, decide, gate_for, question_coverage, top_similarity, yes_probability
from rag.answer.llm_runner import LLMRunner, RequestLLM
from rag.answer.routing import route_question
from rag.answer.stream import AnswerStream
from rag.answer.types import AnswerResult, ChatTurn, Source
from rag.caching import LRUCache
from rag.config import RagConfig
from rag.models.prefix_pins import begin_question
from rag.models.priority import PROCESS_PRIORITY, Priority
from rag.prompts import CONDENSE_PROMPT, NO_KB_SYSTEM_PROMPT, adds_instructions, as_quoted_data
from rag.retrieval.assembly import RetrievalChain, build_retrieval, empty_reason
from rag.retrieval.query import QueryError, RetrievalResult, SearchQuery, as_search_query, validate_query
from rag.retrieval.question_kind import is_broad
from rag.retrieval.trace import QueryTrace
from rag.text.language import detect_language

logger = logging.getLogger(__name__)

HISTORY_TURNS = 6  # condensation sees at most this many earlier messages
HISTORY_CHARS = 600  # ... each cut to this length
RESULT_CACHE_SIZE = 256


class CitewiseQueryEngine(BaseQueryEngine):
    """Retrieval chain + answering LLM, built once for one ``RagConfig``.

    Args:
        config: The settings the engine was assembled from (the gate reads ``generation``).
        retrieval: The retriever and postprocessors (``build_retrieval``).
        store: The document store (chunks, pages and stored files for highlights, BM25 IDF for the gate).
        llm: The answering LLM with its fallback, or None for a retrieval-only engine.
        embedder_for_checks: An embedder or ``EmbedderRouter`` for the semantic groundedness check.
            Defaults to none (lexical and number checks only).
        search_mode: "always" retrieves for every question; "auto" lets a tool-calling LLM decide.
            Defaults to "always".
        llm_groundedness: Also ask the LLM whether each cited sentence is supported. Defaults to False.
        streaming: ``query()`` returns a ``StreamingResponse``. Defaults to False.
        priority: Questions run in its foreground, so background embedding waits while one is answered.
            Defaults to the process's.
    """

    def __init__(self, config: RagConfig, retrieval: RetrievalChain, store: Any, llm: LLMRunner | None, *,
                 embedder_for_checks: Any = None, search_mode: str = "always", llm_groundedness: bool = False,
                 streaming: bool = False, callback_manager: CallbackManager | None = None,
                 priority: Priority | None = None) -> None:
        if search_mode not in ("always", "auto"):
            raise ValueError(f"search_mode must be 'always' or 'auto', got {search_mode!r}")
        super().__init__(callback_manager)
        self.config = config
        self.retrieval = retrieval
        self.store = store
        self.llm = llm
        self.embedder_for_checks = embedder_for_checks
        self.search_mode = search_mode
        self.llm_groundedness = llm_groundedness
        self.streaming = streaming
        self.priority = priority or PROCESS_PRIORITY
        self._results: LRUCache[RetrievalResult] = LRUCache(RESULT_CACHE_SIZE)

    @classmethod
    def from_config(cls, config: RagConfig, store: Any, llm: LLMRunner | None, *, reranker: Any = None,
                    enhancer: Any = None, **kwargs: Any) -> CitewiseQueryEngine:
        """Assemble the retrieval chain ``config`` describes around the given store and models.

        The context budget is counted with the answering model's own tokenizer when it has one, so
        ``generation.max_context_tokens`` is in real tokens.
        """
        counter = getattr(llm.llm, "count_tokens", None) if llm is not None else None
        retrieval = build_retrieval(config, store, llm=llm.llm if llm is not None else None, reranker=reranker,
                                    count_tokens=counter if callable(counter) else None, enhancer=enhancer)
        kwargs.setdefault("embedder_for_checks", store.router)
        return cls(config, retrieval, store, llm, **kwargs)

    # -- retrieval ----------------------------------------------------------------------------------

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """llama-index's ``retrieve``: the retriever, then every postprocessor in order."""
        return self.retrieval.run(as_search_query(query_bundle))

    def search(self, question: str, *, doc_ids: Sequence[str] | None = None,
               broad: bool | None = None) -> RetrievalResult:
        """The passages for ``question`` with the trace of every stage (cached until documents change).

        ``broad`` is the question's kind as the answering path read it; None reads it from the question's wording
        (``rag.retrieval.question_kind``).

        Raises:
            QueryError: The question is empty or too long, or ``doc_ids`` names unknown documents.
        """
        with self.priority.foreground():  # background embedding waits while a question is answered
            return self._search(validate_query(question), doc_ids, broad)

    def _search(self, question: str, doc_ids: Sequence[str] | None, broad: bool | None) -> RetrievalResult:
        doc_filter = self._check_filter(doc_ids)
        key = (question, None if doc_filter is None else tuple(doc_filter), broad, self.store.version)
        hit = self._results.get(key)
        if hit is not None:
            return replace(hit, cached=True)
        trace = QueryTrace(query=question)
        if len(self.store.keywords) == 0:
            return RetrievalResult(question, [], trace, empty_reason="No documents are indexed yet: upload a document first.")
        if doc_filter is not None and not doc_filter:
            return RetrievalResult(question, [], trace, empty_reason="The document filter selects no documents.")
        nodes = self.retrieve(SearchQuery(query_str=question, doc_ids=doc_filter, trace=trace, broad=broad))
        result = RetrievalResult(question, nodes, trace, empty_reason="" if nodes else empty_reason(trace))
        self._results.put(key, result)
        return result

    def _check_filter(self, doc_ids: Sequence[str] | None) -> list[str] | None:
        if doc_ids is None:
            return None
        unknown = sorted(set(doc_ids) - self.store.searchable_ids())
        if unknown:
            raise QueryError(f"unknown or unfinished documents in the filter: {', '.join(unknown)}")
        return sorted(set(doc_ids))

    # -- answering ----------------------------------------------------------------------------------

    def stream(self, question: str, *, history: Sequence[ChatTurn] = (), doc_ids: Sequence[str] | None = None,
               use_knowledge_base: bool = True, search_mode: str | None = None,
               skip_gate: bool = False, broad: bool | None = None) -> AnswerStream:
        """Retrieve and prepare the answer; iterate the returned stream for tokens.

        ``skip_gate`` answers without the answerability gate (the Chat page's "Ask anyway"); the answer's
        claims are still verified against their sources. ``broad`` answers the question as a broad one (True:
        the Chat page's "Answer as an explanation") or a factoid one (False); None reads its kind from its wording.

        Raises:
            QueryError: The question is empty or too long, or ``doc_ids`` names unknown documents.
            ValueError: The engine was built without an LLM.
        """
        with self.priority.foreground():  # and the returned stream holds it again while it generates
            return self._stream(question, history=history, doc_ids=doc_ids, use_knowledge_base=use_knowledge_base,
                                search_mode=search_mode, skip_gate=skip_gate, broad=broad)

    def _stream(self, question: str, *, history: Sequence[ChatTurn], doc_ids: Sequence[str] | None,
                use_knowledge_base: bool, search_mode: str | None, skip_gate: bool,
                broad: bool | None) -> AnswerStream:
        asked = time.perf_counter()
        question = validate_query(question)
        if self.llm is None:
            raise ValueError("this engine was built for retrieval only (no LLM); it cannot answer")
        begin_question()  # its first model call starts from the same cache whatever was asked before
        request = self.llm.request()
        timings: dict[str, float] = {}
        trace: dict[str, Any] = {"doc_ids": list(doc_ids) if doc_ids is not None else None}
        standalone = question
        if history:
            started = time.perf_counter()
            standalone = self.condense(request, question, history, trace)
            timings["condense_ms"] = _ms(started)
        if not use_knowledge_base:
            messages = [ChatMessage(role=MessageRole.SYSTEM, content=NO_KB_SYSTEM_PROMPT),
                        *_history_messages(history), ChatMessage(role=MessageRole.USER, content=question)]
            return AnswerStream(self, request, question, standalone, messages, [], None, asked, timings, trace,
                                broad=False, use_knowledge_base=False)
        if (search_mode or self.search_mode) == "auto":
            started = time.perf_counter()
            decision = route_question(request.llm, standalone, trace)
            timings["route_ms"] = _ms(started)
            if decision.direct_answer is not None:
                return AnswerStream(self, request, question, standalone, None, [], None, asked, timings, trace,
                                    broad=False, use_knowledge_base=False, fixed_answer=decision.direct_answer)
            standalone = decision.query or standalone
        # read once and carried to every step (retrieval, the rules, the gate, sampling, verification)
        read_by = "wording" if broad is None else "user"
        broad = is_broad(standalone) if broad is None else broad
        trace["question_kind"] = {"broad": broad, "read_by": read_by}
        retrieval = self.search(standalone, doc_ids=doc_ids, broad=broad)
        sources = sources_from_nodes(retrieval.nodes)
        timings["sources_ms"] = _ms(asked)
        if not sources:
            trace["abstained_without_llm"] = retrieval.empty_reason or "no sources"
            return AnswerStream(self, request, question, standalone, None, [], retrieval, asked, timings, trace,
                                fixed_answer=abstain_text(standalone), broad=broad)
        messages = build_answer_messages(standalone, sources, model_name(request.llm), broad=broad)
        return AnswerStream(self, request, question, standalone, messages, sources, retrieval, asked, timings, trace,
                            skip_gate=skip_gate, broad=broad)

    def answer(self, question: str, **kwargs: Any) -> AnswerResult:
        """``stream()`` consumed to the end; returns the final result."""
        return self.stream(question, **kwargs).result()

    def condense(self, request: RequestLLM, question: str, history: Sequence[ChatTurn], trace: dict[str, Any]) -> str:
        """A standalone version of a follow-up question; the question itself when condensing fails."""
        lines = [f"{turn.role}: {as_quoted_data(' '.join(turn.content.split())[:HISTORY_CHARS])}"
                 for turn in list(history)[-HISTORY_TURNS:]]
        prompt = CONDENSE_PROMPT.format(history="\n".join(lines), question=question)
        try:
            reply = request.llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)], max_tokens=96)
            text = (reply.message.content or "").strip()
        except Exception as exc:  # noqa: BLE001 - retrieval with the raw question still works
            logger.warning("condensing the follow-up failed: %s", exc)
            trace["condense_error"] = f"{type(exc).__name__}: {exc}"
            return question
        line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        for prefix in ("Standalone question:", "Question:", "问题：", "问题:"):
            if line.startswith(prefix):
                line = line[len(prefix):].strip()
        standalone = line if 3 <= len(line) <= 1000 else question
        if adds_instructions(standalone, question):  # the model obeyed the conversation (a quoted document)
            trace["condense_rejected"] = standalone
            trace["condense_rejected_why"] = "it adds an instruction"
            standalone = question
        trace["standalone_question"] = standalone
        return standalone

    def check_answerable(self, request: RequestLLM, messages: list[ChatMessage], sources: Sequence[Source],
                         retrieval: RetrievalResult | None, question: str) -> Verdict:
        """Ask the LLM whether the sources contain the answer, and gate (see ``rag.answer.gate``).

        A failing LLM switches to the fallback once, like the answer itself; if that fails too the request's
        ``error`` is set and the answer is not attempted, so the user waits for one timeout, not two.
        """
        started = time.perf_counter()
        similarity = top_similarity(retrieval, sources)
        # without the question itself, coverage is unknown (None counts as covered)
        coverage = question_coverage(question, sources, self.store.keywords.idf) if question else None
        probe = check_messages(messages)
        outcome = request.call("answerability check", lambda llm: yes_probability(llm, probe))
        gate = gate_for(request.llm, self.config.generation, detect_language(question or messages[-1].content or ""))
        if outcome is None:
            verdict = Verdict(True, None, coverage, None, gate.describe(), similarity, "error", request.error)
        else:
            verdict = decide(outcome[0], coverage, outcome[1], gate, similarity)
        verdict.ms = _ms(started)
        return verdict

    # -- llama-index's query API --------------------------------------------------------------------

    def _query(self, query_bundle: QueryBundle) -> Response | StreamingResponse:
        stream = self.stream(query_bundle.query_str)
        if not self.streaming:
            result = stream.result()
            return Response(response=result.answer, source_nodes=source_nodes(result.sources),
                            metadata=result_metadata(result))
        metadata: dict[str, Any] = {"answer_stream": stream}

        def tokens() -> Iterator[str]:
            yield from stream
            metadata.update(result_metadata(stream.result()))

        return StreamingResponse(response_gen=tokens(), source_nodes=source_nodes(stream.sources), metadata=metadata)

    async def _aquery(self, query_bundle: QueryBundle) -> Response | StreamingResponse:
        return await asyncio.to_thread(self._query, query_bundle)

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}


def source_nodes(sources: Sequence[Source]) -> list[NodeWithScore]:
    """The numbered sources as llama-index nodes (id = chunk id, the source number in metadata)."""
    return [NodeWithScore(node=TextNode(id_=s.chunk_id, text=s.text, metadata={
        "n": s.n, "doc_id": s.doc_id, "file_name": s.file_name, "page_start": s.page_start,
        "page_end": s.page_end}), score=s.score) for s in sources]


def result_metadata(result: AnswerResult) -> dict[str, Any]:
    return {"result": result, "abstained": result.abstained, "citations": result.citations,
            "reflection": result.reflection, "groundedness": result.groundedness, "timings": result.timings,
            "error": result.error, "fallback_reason": result.fallback_reason}


def model_name(llm: Any) -> str | None:
    """The name a bundled model's tuned values and prompt rules are keyed by (None when it has none)."""
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None)
    return name if isinstance(name, str) else None


def _history_messages(history: Sequence[ChatTurn]) -> list[ChatMessage]:
    roles = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
    return [ChatMessage(role=roles.get(turn.role, MessageRole.USER), content=turn.content)
            for turn in list(history)[-HISTORY_TURNS:]]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)

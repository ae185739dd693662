"""The answering engine: condense → (route) → retrieve → numbered sources → streamed, cited answer.

``AnswerEngine.stream()`` does everything up to the first token synchronously (condensing a follow-up
with the chat history, retrieval, numbering the sources), so ``AnswerStream.sources`` is ready before
any token is yielded. Iterating the stream yields answer tokens; ``result()`` then runs the reflection
rounds, resolves ``[n]`` markers to exact highlights, checks groundedness and returns an
``AnswerResult``. If a later reflection round wins, ``result().answer`` differs from the streamed draft
and the UI should replace the draft.

The prompt keeps a fixed prefix (``ANSWER_SYSTEM_PROMPT``) identical across requests so llama.cpp can
reuse its KV cache; sources are budgeted to ``generation.max_context_tokens`` in the answering model's
own tokens when it can count them. All text in results is plain text (see ``rag.answer.types``).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterator, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from rag.answer.types import AnswerResult, ChatTurn, Citation, Source
from rag.answer.gate import (
    Verdict,
    check_messages,
    decide,
    gate_for,
    question_coverage,
    top_similarity,
    yes_probability,
)
from rag.answer.stream import AnswerStream
from rag.answer.citations import (
    abstain_text,
    budget_sources,
    build_answer_messages,
    sources_from_nodes,
)
from rag.config import RagConfig
from rag.text.language import count_tokens, detect_language
from rag.retrieval.pipeline import RetrievalPipeline, RetrievalResult, validate_query
from rag.prompts import CONDENSE_PROMPT, NO_KB_SYSTEM_PROMPT
from rag.answer.routing import route_question
from rag.index.store import DocumentStore

logger = logging.getLogger(__name__)

__all__ = ["AnswerEngine", "AnswerResult", "AnswerStream", "ChatTurn", "Citation", "Source"]

HISTORY_TURNS = 6  # condensation sees at most this many earlier messages
HISTORY_CHARS = 600  # ... each cut to this length


class AnswerEngine:
    """Answers questions over a ``RetrievalPipeline`` with a streamed, cited LLM answer.

    Args:
        pipeline: The retrieval pipeline (configured per call).
        store: The document store (chunks, pages, stored PDFs for highlights).
        llm: The answering LLM (also used for condensing, grading and rewriting).
        embedder_for_checks: Embedding model or ``EmbedderRouter`` for the semantic groundedness check.
            Defaults to none (lexical and number checks only).
        fallback_llm_factory: Builds the embedded LLM when ``llm`` fails mid-request; called at most once
            and cached. Defaults to none (a failure becomes ``AnswerResult.error``).
        llm_backend: Shown in results ("embedded" or "openai"). Defaults to "embedded".
        llm_fallback_reason: Why ``llm`` is a fallback already (from ``build_llm``). Defaults to "".
        search_mode: "always" retrieves for every question; "auto" lets a tool-calling LLM decide
            (backends without tool calling always retrieve). Defaults to "always".
        llm_groundedness: Also ask the LLM whether each cited sentence is supported. Defaults to False.
    """

    def __init__(self, pipeline: RetrievalPipeline, store: DocumentStore, llm: LLM, *,
                 embedder_for_checks: Any = None, fallback_llm_factory: Callable[[], LLM] | None = None,
                 llm_backend: str = "embedded", llm_fallback_reason: str = "", search_mode: str = "always",
                 llm_groundedness: bool = False) -> None:
        if search_mode not in ("always", "auto"):
            raise ValueError(f"search_mode must be 'always' or 'auto', got {search_mode!r}")
        self.pipeline = pipeline
        self.store = store
        self.llm = llm
        self.embedder_for_checks = embedder_for_checks
        self.fallback_llm_factory = fallback_llm_factory
        self.llm_backend = llm_backend
        self.llm_fallback_reason = llm_fallback_reason
        self.search_mode = search_mode
        self.llm_groundedness = llm_groundedness
        self._fallback_llm: LLM | None = None
        # One context budget: the pipeline fits sources to generation.max_context_tokens in the answering
        # model's own tokens (when it can count them), and select_sources only re-checks in that same unit.
        counter = getattr(llm, "count_tokens", None)
        if callable(counter) and getattr(pipeline, "count_tokens", None) is None:
            pipeline.count_tokens = counter

    # -- public API ---------------------------------------------------------------------------

    def stream(self, question: str, config: RagConfig, *, history: Sequence[ChatTurn] = (),
               doc_ids: Sequence[str] | None = None, use_knowledge_base: bool = True,
               search_mode: str | None = None) -> AnswerStream:
        """Retrieve and prepare the answer; iterate the returned stream for tokens.

        Raises:
            rag.retrieval.pipeline.QueryError: The question is empty or too long, or ``doc_ids`` names unknown documents.
        """
        asked = time.perf_counter()
        question = validate_query(question)
        timings: dict[str, float] = {}
        trace: dict[str, Any] = {"doc_ids": list(doc_ids) if doc_ids is not None else None}
        standalone = question
        if history:
            started = time.perf_counter()
            standalone = self.condense(question, history, trace)
            timings["condense_ms"] = _ms(started)
        if not use_knowledge_base:
            messages = [ChatMessage(role=MessageRole.SYSTEM, content=NO_KB_SYSTEM_PROMPT),
                        *_history_messages(history), ChatMessage(role=MessageRole.USER, content=question)]
            return AnswerStream(self, question, standalone, config, messages, [], None, asked, timings, trace,
                                use_knowledge_base=False)
        mode = search_mode or self.search_mode
        if mode == "auto":
            started = time.perf_counter()
            decision = route_question(self.llm, standalone, trace)
            timings["route_ms"] = _ms(started)
            if decision.direct_answer is not None:
                return AnswerStream(self, question, standalone, config, None, [], None, asked, timings, trace,
                                    use_knowledge_base=False, fixed_answer=decision.direct_answer)
            standalone = decision.query or standalone
        retrieval = self.pipeline.retrieve(standalone, config, doc_ids=doc_ids)
        sources = self.select_sources(retrieval, config)
        timings["sources_ms"] = _ms(asked)
        if not sources:
            trace["abstained_without_llm"] = retrieval.empty_reason or "no sources"
            return AnswerStream(self, question, standalone, config, None, [], retrieval, asked, timings, trace,
                                fixed_answer=abstain_text(standalone))
        messages = build_answer_messages(standalone, sources)
        return AnswerStream(self, question, standalone, config, messages, sources, retrieval, asked, timings, trace)

    def answer(self, question: str, config: RagConfig, **kwargs: Any) -> AnswerResult:
        """``stream()`` consumed to the end; returns the final result."""
        stream = self.stream(question, config, **kwargs)
        for _ in stream:
            pass
        return stream.result()

    # -- steps (also used by AnswerStream and the reflection loop) -------------------------------

    def select_sources(self, retrieval: RetrievalResult, config: RagConfig) -> list[Source]:
        """Number the retrieved chunks; the budget check uses the pipeline's counter (the same unit it
        fitted the context in), so it only ever trims when the pipeline had no counter at all."""
        counter = getattr(self.pipeline, "count_tokens", None) or count_tokens
        return budget_sources(sources_from_nodes(retrieval.nodes), config.generation.max_context_tokens, counter)

    def condense(self, question: str, history: Sequence[ChatTurn], trace: dict[str, Any]) -> str:
        """A standalone version of a follow-up question; the question itself when condensing fails."""
        lines = [f"{turn.role}: {' '.join(turn.content.split())[:HISTORY_CHARS]}"
                 for turn in list(history)[-HISTORY_TURNS:]]
        prompt = CONDENSE_PROMPT.format(history="\n".join(lines), question=question)
        try:
            reply = self.llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)], max_tokens=96)
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
        trace["standalone_question"] = standalone
        return standalone

    def check_answerable(self, messages: list[ChatMessage], sources: Sequence[Source],
                         retrieval: RetrievalResult | None, config: RagConfig, state: dict[str, Any],
                         question: str = "") -> Verdict:
        """Ask the LLM whether the sources contain the answer (see ``rag.answer.gate``).

        A failing LLM is handled like in ``generate``: switch to the fallback once, or record the error in
        ``state["error"]`` (the answer is then not attempted, so the user waits for one timeout, not two).
        """
        started = time.perf_counter()
        similarity = top_similarity(retrieval, sources)
        # without the question itself, coverage is unknown (None counts as covered): the last message holds
        # the sources too, and their words would be measured against themselves
        coverage = question_coverage(question, sources, self.store.keywords.idf) if question else None
        llm = state.get("llm") or self.llm
        language = detect_language(question or messages[-1].content or "")  # gates are calibrated per language
        gate = gate_for(llm, config.generation, language)
        probe = check_messages(messages)
        for attempt in (1, 2):
            try:
                p_yes, method = yes_probability(llm, probe)
                break
            except Exception as exc:  # noqa: BLE001 - any backend failure becomes a clear message
                fallback = self._fall_back(exc, attempt, state, "answerability check")
                if fallback is None:
                    verdict = Verdict(True, None, coverage, None, gate.describe(), similarity, "error",
                                      state["error"])
                    verdict.ms = _ms(started)
                    return verdict
                state["llm"] = llm = fallback
                gate = gate_for(llm, config.generation, language)
        verdict = decide(p_yes, coverage, method, gate, similarity)
        verdict.ms = _ms(started)
        return verdict

    def generate(self, messages: list[ChatMessage], state: dict[str, Any]) -> Iterator[str]:
        """Stream answer deltas, switching to the fallback LLM once if the current one fails.

        ``state`` collects ``error``, ``fallback_reason``, ``llm_backend`` and ``restarted``.
        """
        llm = state.get("llm") or self.llm
        attempts = 0
        while True:
            attempts += 1
            produced = False
            try:
                for response in llm.stream_chat(messages):
                    delta = response.delta or ""
                    if delta:
                        produced = True
                        yield delta
                state["llm"] = llm
                return
            except Exception as exc:  # noqa: BLE001 - any backend failure becomes a clear message
                fallback = self._fall_back(exc, attempts, state, "answering")
                if fallback is None:
                    return
                state["restarted"] = produced
                if produced:
                    yield "\n\n"
                llm = fallback

    def _fall_back(self, exc: BaseException, attempt: int, state: dict[str, Any], step: str) -> LLM | None:
        """After a failure on the first attempt, the embedded fallback LLM (recorded in ``state``).

        Returns None, with ``state["error"]`` set, when there is no fallback or it failed too.
        """
        message = llm_error_message(exc, state.get("llm_backend", self.llm_backend))
        logger.warning("LLM failed during %s: %s", step, message)
        fallback = self._get_fallback() if attempt == 1 and self.fallback_llm_factory else None
        if fallback is None:
            state["error"] = message + (" (fallback model also failed)" if attempt > 1 else "")
            return None
        state["fallback_reason"] = f"{message}; answered with the embedded model instead"
        state["llm_backend"] = "embedded"
        return fallback

    def _get_fallback(self) -> LLM | None:
        if self._fallback_llm is None and self.fallback_llm_factory is not None:
            try:
                self._fallback_llm = self.fallback_llm_factory()
            except Exception as exc:  # noqa: BLE001
                logger.error("the fallback LLM could not be built: %s", exc)
                return None
        return self._fallback_llm


def llm_error_message(exc: BaseException, backend: str) -> str:
    """What went wrong and what to check, in one sentence for the UI."""
    from rag.models.llm_openai import LLMUnavailableError

    if isinstance(exc, LLMUnavailableError):
        return str(exc)
    if backend == "openai":
        return (f"The LLM server failed while answering ({type(exc).__name__}: {exc}) — check that the server "
                "is running, llm.base_url and llm.model are right, and the API key variable is set")
    return (f"The embedded LLM failed while answering ({type(exc).__name__}: {exc}) — check llm.embedded_model "
            "and that the model file is intact (python -m rag bench llm)")


def _history_messages(history: Sequence[ChatTurn]) -> list[ChatMessage]:
    roles = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
    return [ChatMessage(role=roles.get(turn.role, MessageRole.USER), content=turn.content)
            for turn in list(history)[-HISTORY_TURNS:]]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)


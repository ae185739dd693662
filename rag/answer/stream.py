"""``AnswerStream``: the sources at once, then answer tokens, then the finished ``AnswerResult``.

Iterate it for tokens (``st.write_stream(iter(stream))`` works); call ``result()`` afterwards, which
resolves citations to exact highlights and checks groundedness; calling it before iterating consumes
the stream first. Before the first token the answerability gate may decide that the sources do not
hold the answer; the stream then yields the "not found" sentence instead of calling the model. The
streamed tokens are a draft: ``result()`` verifies each claim against the source it cites
(``rag.answer.verify``) and its ``answer`` keeps only verified claims, or says "not found" when none
is left (``draft`` keeps what was streamed, ``verification`` says why).
"""

from __future__ import annotations

import logging
import time
from contextlib import nullcontext
from typing import Any, ContextManager, Iterator, Protocol, Sequence

from llama_index.core.base.llms.types import ChatMessage

from rag.answer.citations import (abstain_text, add_inferred_markers, cited_sentences, is_abstention,
                                  without_abstention)
from rag.answer.confidence import answer_confidence, check_confidence
from rag.answer.gate import Verdict, confidence_threshold_for, verify_thresholds_for
from rag.answer.groundedness import check_groundedness
from rag.answer.llm_runner import LLMRunner, RequestLLM
from rag.answer.locate import locate_citations
from rag.answer.topic import check_broad
from rag.answer.types import AnswerResult, Citation, Source
from rag.answer.verify import revise, verify_claims
from rag.config import RagConfig
from rag.retrieval.query import RetrievalResult
from rag.text.language import detect_language

logger = logging.getLogger(__name__)

# What must be left of a broad answer once its "not found" sentences are taken away for it to be shown (and
# verified) rather than refused: a sentence of content, in either language.
PARTIAL_ANSWER_MIN_CHARS = 40


class AnswerSteps(Protocol):
    """What a stream needs from the engine that prepared it (``CitewiseQueryEngine``)."""

    config: RagConfig
    store: Any
    llm: LLMRunner
    embedder_for_checks: Any
    llm_groundedness: bool

    def check_answerable(self, request: RequestLLM, messages: list[ChatMessage], sources: Sequence[Source],
                         retrieval: RetrievalResult | None, question: str) -> Verdict: ...


class AnswerStream:
    """Tokens of one answer. ``sources`` and ``retrieval`` are set before the first token.

    Args:
        engine: The engine that prepared the answer (store, gate settings, checks).
        request: The request's LLM (with its fallback state).
        question: The question as asked.
        standalone: The question condensed with the chat history (the question itself without history).
        messages: The prompt, or None when no model call is needed.
        sources: The numbered sources in the prompt.
        retrieval: The retrieval result, or None without the knowledge base.
        asked: ``time.perf_counter()`` when the question arrived.
        timings: Milliseconds so far, by step.
        trace: What happened so far (condensation, routing, the document filter).
        use_knowledge_base: False when answering without the documents.
        fixed_answer: A reply that needs no model call (abstention, a routed direct answer).
        skip_gate: Answer without the answerability gate ("Ask anyway"); claims are still verified.
        broad: The question's kind as the engine read it (its wording, or the user's choice).
    """

    def __init__(self, engine: AnswerSteps, request: RequestLLM, question: str, standalone: str,
                 messages: list[ChatMessage] | None, sources: list[Source], retrieval: RetrievalResult | None,
                 asked: float, timings: dict[str, float], trace: dict[str, Any], *,
                 broad: bool, use_knowledge_base: bool = True, fixed_answer: str | None = None,
                 skip_gate: bool = False) -> None:
        self.engine = engine
        self.request = request
        self.question = question
        self.standalone_question = standalone
        self.messages = messages
        self.sources = sources
        self.retrieval = retrieval
        self.use_knowledge_base = use_knowledge_base
        self._fixed_answer = fixed_answer
        self.skip_gate = skip_gate
        self._asked = asked
        self._timings = timings
        self._trace = trace
        self._gated = False
        self._text = ""
        self._consumed = False
        self._iterating = False
        self._result: AnswerResult | None = None
        self._verification: list[dict[str, Any]] = []
        self._draft = ""
        self._confidence: dict[str, Any] | None = None
        self._broad = broad  # read at each step below: the gate, sampling, confidence, verification

    def __iter__(self) -> Iterator[str]:
        if self._consumed or self._iterating:
            raise RuntimeError("an AnswerStream can be iterated only once")
        self._iterating = True
        return self._tokens()

    @property
    def text(self) -> str:
        """The answer text streamed so far."""
        return self._text

    def _foreground(self) -> ContextManager[Any]:
        """The engine's question priority (background embedding waits), when it has one."""
        priority = getattr(self.engine, "priority", None)
        return priority.foreground() if priority is not None else nullcontext()

    def _tokens(self) -> Iterator[str]:
        started = time.perf_counter()
        pieces = 0
        first: float | None = None
        try:
            with self._foreground():
                for delta in self._pieces():
                    if first is None:
                        first = time.perf_counter()
                    pieces += 1
                    self._text += delta
                    yield delta
        finally:
            self._consumed, self._iterating = True, False
            self._record_speed(started, first, pieces)

    def _pieces(self) -> Iterator[str]:
        if self._fixed_answer is not None or self.messages is None:
            return iter([self._fixed_answer or ""])
        verdict = self._check()
        if self.request.error:
            return iter([])
        if verdict is not None and not verdict.answerable:
            self._gated = True
            return iter([abstain_text(self.standalone_question)])
        penalty = self.engine.config.generation.broad_repeat_penalty
        if self._broad and penalty > 1.0:
            # a summary is long enough for the 1.5B model to loop ("主要原因是主要原因是…"); factoid answers stay
            # unpenalised, as their gate and verifier were tuned
            return self.request.stream(self.messages, repeat_penalty=penalty)
        return self.request.stream(self.messages)

    def _check(self) -> Verdict | None:
        """Run the answerability gate (when on); its verdict goes into the trace."""
        if not (self.engine.config.generation.answer_check and self.use_knowledge_base and self.sources):
            return None
        if self.skip_gate:
            self._trace["answerability"] = {"skipped": "ask anyway"}
            return None
        if self._broad:  # the factoid gate was never fitted for a summary; its rules leave "not found" to this check
            verdict = check_broad(self.request, self.messages, self.sources, self.standalone_question,
                                  self.engine.config.generation, getattr(self.engine.store.keywords, "idf", None))
        else:
            verdict = self.engine.check_answerable(self.request, self.messages, self.sources, self.retrieval,
                                                   self.standalone_question)
        self._trace["answerability"] = verdict.to_dict()
        self._timings["answer_check_ms"] = verdict.ms
        stats = getattr(self.request.llm, "last_check_stats", None) or {}
        if stats.get("prompt_eval_tokens") is not None:  # what the first token waited for (the gate's prefill)
            self._timings["gate_prompt_tokens"] = int(stats["prompt_eval_tokens"])
        return verdict

    def _record_speed(self, started: float, first: float | None, pieces: int) -> None:
        ended = time.perf_counter()
        self._timings["ttft_ms"] = round(((first or ended) - self._asked) * 1000, 1)
        self._timings["generation_ms"] = round((ended - started) * 1000, 1)
        stats = getattr(self.request.llm, "last_stats", None) or {}
        generated = self.messages is not None and not self._gated
        counted = int(stats.get("gen_tokens") or 0) if generated else 0
        self._timings["tokens"] = counted or (pieces if generated else 0)
        seconds = max(ended - (first or ended), 1e-6)
        self._timings["tokens_per_s"] = round(self._timings["tokens"] / seconds, 2) if pieces > 1 else 0.0
        if stats.get("prompt_eval_tokens") is not None and generated:
            self._timings["prompt_tokens_evaluated"] = int(stats["prompt_eval_tokens"])
            self._timings["context_tokens"] = int(stats.get("context_tokens") or 0)
        if stats:
            self.request.stats = dict(stats)
        if generated and pieces:
            # read now: a later call on the same model (groundedness) records its own tokens
            self._confidence = answer_confidence(getattr(self.request.llm, "last_token_probs", None))
            self._trace["answer_confidence"] = self._confidence

    def result(self) -> AnswerResult:
        if self._result is not None:
            return self._result
        if not self._consumed:
            for _ in self:
                pass
        with self._foreground():  # claim verification, highlights and groundedness are still the question's work
            return self._finish()

    def _finish(self) -> AnswerResult:
        answer, sources, error = self._text.strip(), self.sources, self.request.error
        abstained = False
        citations: list[Citation] = []
        groundedness: list[dict[str, Any]] = []
        if self.use_knowledge_base and not error:
            sentences = cited_sentences(answer, len(sources))
            explicit = any(s.numbers for s in sentences)
            abstained = not sources or self._gated or (is_abstention(answer) and not explicit)
            if abstained and sources and not self._gated:  # the model's own "not found" (or nothing)
                if self._broad:
                    answer, abstained, sentences = self._partial_broad_answer(answer)
                if abstained and answer != abstain_text(self.standalone_question):
                    # shown in the app's words and the question's language: the 1.5B model wrote the English
                    # phrase to traditional-Chinese questions
                    self._draft, answer = answer, abstain_text(self.standalone_question)
                    self._trace["refused_by_model"] = True
            if not abstained:
                answer, abstained = self._check_confidence(answer)
            if not abstained and self.engine.config.generation.verify_claims:
                answer, abstained, sentences = self._verify(answer, sentences)
            if not abstained:
                started = time.perf_counter()
                citations = locate_citations(self.engine.store, sentences, sources)
                self._timings["highlight_ms"] = _ms(started)
                answer, added = add_inferred_markers(answer, citations)
                if added:
                    self._trace["markers_added"] = added  # the model wrote no marker for these sentences
                started = time.perf_counter()
                groundedness = check_groundedness(
                    sentences, sources, embedder=self.engine.embedder_for_checks,
                    llm=self.request.llm if self.engine.llm_groundedness else None)
                self._timings["groundedness_ms"] = _ms(started)
        self._timings.update(self._stage_timings())
        self._timings["total_ms"] = _ms(self._asked)
        fallback = "; ".join(r for r in (self.engine.llm.chosen_because, self.request.fallback_reason) if r)
        self._result = AnswerResult(
            question=self.question, answer=answer, abstained=abstained, citations=citations, sources=sources,
            reflection=list((self.retrieval.details.get("reflection") if self.retrieval else None) or []),
            groundedness=groundedness, verification=self._verification, draft=self._draft,
            timings=dict(self._timings), trace=self._trace_dict(),
            llm_backend=self.request.backend, fallback_reason=fallback, error=error,
            standalone_question=self.standalone_question, used_knowledge_base=self.use_knowledge_base)
        return self._result

    def _partial_broad_answer(self, answer: str) -> tuple[str, bool, list[Any]]:
        """A summary ending in "not found" for a part it lacked keeps the rest, still verified: the 1.5B model copied
        a book's comparison of GBDT and XGBoost, then added "not found", and a refusal hid a right answer."""
        rest = without_abstention(answer)
        if len(rest) < PARTIAL_ANSWER_MIN_CHARS:
            return answer, True, []
        self._trace["not_found_sentences_dropped"] = True
        return rest, False, cited_sentences(rest, len(self.sources))

    def _check_confidence(self, answer: str) -> tuple[str, bool]:
        """Refuse a draft whose first phrase the model was unsure of (off at threshold 0).

        Skipped like the gate for "Ask anyway" (the user asked to see the draft; its claims are still checked)
        and for broad questions (a summary's first phrase says nothing about its support; the check was tuned
        on factoid answers under the extract-first rules).
        """
        if self.skip_gate or self._broad:
            return answer, False
        signal, minimum = confidence_threshold_for(self.request.llm, self.engine.config.generation,
                                                   detect_language(self.standalone_question))
        note = check_confidence(self._confidence, signal, minimum)
        if note is None:
            return answer, False
        self._verification = [note]
        self._draft = answer
        self._trace["refused_by_confidence"] = True
        return abstain_text(self.standalone_question), True

    def _verify(self, answer: str, sentences: list[Any]) -> tuple[str, bool, list[Any]]:
        """Check each claim against its cited source; drop failed claims (all failed: abstain)."""
        settings = self.engine.config.generation
        started = time.perf_counter()
        anchor_min, threshold = verify_thresholds_for(self.request.llm, settings,
                                                      detect_language(self.standalone_question))
        checks = verify_claims(
            self.standalone_question, sentences, self.sources, idf=getattr(self.engine.store.keywords, "idf", None),
            llm=self.request.llm if settings.verify_with_llm else None, threshold=threshold, anchor_min=anchor_min,
            max_llm_claims=settings.verify_max_claims, broad=self._broad)
        self._timings["verify_ms"] = _ms(started)
        self._verification = [c.to_dict() for c in checks]
        revised, refused = revise(answer, checks)
        if revised == answer and not refused:
            return answer, False, sentences
        self._draft = answer
        if refused:
            self._trace["refused_by_verification"] = True
            return abstain_text(self.standalone_question), True, []
        return revised, False, cited_sentences(revised, len(self.sources))

    def _stage_timings(self) -> dict[str, float]:
        if self.retrieval is None:
            return {}
        out: dict[str, float] = {}
        for stage in self.retrieval.trace.stages:
            key = f"{stage.name}_ms"
            out[key] = round(out.get(key, 0.0) + stage.duration_ms, 1)
        out["retrieval_ms"] = round(self.retrieval.trace.total_ms, 1)
        return out

    def _trace_dict(self) -> dict[str, Any]:
        trace = dict(self._trace)
        if self.retrieval is not None:
            trace["retrieval"] = self.retrieval.trace.to_dict()
            trace["retrieval_cached"] = self.retrieval.cached
            trace["empty_reason"] = self.retrieval.empty_reason
            if self.retrieval.details:
                trace["retrieval_details"] = dict(self.retrieval.details)
        if self.messages is not None:
            trace["prompt_chars"] = sum(len(m.content or "") for m in self.messages)
        if self.request.stats:
            trace["llm_stats"] = dict(self.request.stats)
        return trace


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)

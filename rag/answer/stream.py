"""``AnswerStream``: answer tokens first, then the finished ``AnswerResult``.

Iterate it for tokens (``st.write_stream(stream)`` works); call ``result()`` afterwards. ``result()``
runs the reflection rounds (when ``reflection.enabled``), resolves citations to exact highlights and
checks groundedness; calling it before iterating consumes the stream first.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Iterator

from llama_index.core.base.llms.types import ChatMessage

from rag.answer.types import AnswerResult, Citation, Source
from rag.answer.citations import (
    add_inferred_markers,
    abstain_text,
    best_quote,
    build_answer_messages,
    cited_sentences,
    infer_source,
    is_abstention,
)
from rag.config import RagConfig
from rag.answer.groundedness import check_groundedness
from rag.answer.highlight import locate_passage
from rag.retrieval.pipeline import RetrievalResult
from rag.retrieval.reflection import reflect

if TYPE_CHECKING:
    from rag.answer.engine import AnswerEngine

logger = logging.getLogger(__name__)


class AnswerStream:
    """Tokens of one answer. ``sources`` and ``retrieval`` are set before the first token."""

    def __init__(self, engine: AnswerEngine, question: str, standalone: str, config: RagConfig,
                 messages: list[ChatMessage] | None, sources: list[Source], retrieval: RetrievalResult | None,
                 asked: float, timings: dict[str, float], trace: dict[str, Any], *,
                 use_knowledge_base: bool = True, fixed_answer: str | None = None) -> None:
        self.engine = engine
        self.question = question
        self.standalone_question = standalone
        self.config = config
        self.messages = messages
        self.sources = sources
        self.retrieval = retrieval
        self.use_knowledge_base = use_knowledge_base
        self._fixed_answer = fixed_answer
        self._asked = asked
        self._timings = timings
        self._trace = trace
        self._state: dict[str, Any] = {"llm_backend": engine.llm_backend}
        self._text = ""
        self._consumed = False
        self._iterating = False
        self._result: AnswerResult | None = None

    def __iter__(self) -> Iterator[str]:
        if self._consumed or self._iterating:
            raise RuntimeError("an AnswerStream can be iterated only once")
        self._iterating = True
        return self._tokens()

    def _tokens(self) -> Iterator[str]:
        started = time.perf_counter()
        tokens = 0
        first: float | None = None
        try:
            if self._fixed_answer is not None or self.messages is None:
                pieces: Iterator[str] = iter([self._fixed_answer or ""])
            else:
                verdict = self._check()
                if self._state.get("error"):
                    pieces = iter([])
                elif verdict is not None and not verdict.answerable:
                    self._state["gated"] = True
                    pieces = iter([abstain_text(self.standalone_question)])
                else:
                    pieces = self.engine.generate(self.messages, self._state)
            for delta in pieces:
                if first is None:
                    first = time.perf_counter()
                tokens += 1
                self._text += delta
                yield delta
        finally:
            ended = time.perf_counter()
            self._consumed = True
            self._iterating = False
            self._timings["ttft_ms"] = round(((first or ended) - self._asked) * 1000, 1)
            self._timings["generation_ms"] = round((ended - started) * 1000, 1)
            stats = getattr(self._state.get("llm") or self.engine.llm, "last_stats", None) or {}
            generated = self.messages is not None and not self._state.get("gated")
            counted = int(stats.get("gen_tokens") or 0) if generated else 0
            self._timings["tokens"] = counted or (tokens if generated else 0)
            seconds = max(ended - (first or ended), 1e-6)
            self._timings["tokens_per_s"] = round(self._timings["tokens"] / seconds, 2) if tokens > 1 else 0.0
            if stats.get("prompt_eval_tokens") is not None and generated:
                self._timings["prompt_tokens_evaluated"] = int(stats["prompt_eval_tokens"])
                self._timings["context_tokens"] = int(stats.get("context_tokens") or 0)

    def _check(self) -> Any:
        """Run the answerability gate (when on); its verdict goes into the trace."""
        settings = self.config.generation
        if not (settings.answer_check and self.use_knowledge_base and self.sources):
            return None
        verdict = self.engine.check_answerable(self.messages, self.sources, self.retrieval, self.config,
                                               self._state, question=self.standalone_question)
        self._trace["answerability"] = verdict.to_dict()
        self._timings["answer_check_ms"] = verdict.ms
        return verdict

    @property
    def text(self) -> str:
        """The answer text streamed so far."""
        return self._text

    def result(self) -> AnswerResult:
        if self._result is not None:
            return self._result
        if not self._consumed:
            for _ in self:
                pass
        started = time.perf_counter()
        answer, sources, reflection = self._text.strip(), self.sources, []
        error = self._state.get("error", "")
        knowledge = self.use_knowledge_base and self.messages is not None
        if knowledge and not error and self.config.reflection.enabled and sources and not self._state.get("gated"):
            answer, sources, reflection = self._reflect(answer, sources)
            self._timings["reflection_ms"] = _ms(started)
        abstained = False
        citations: list[Citation] = []
        groundedness: list[dict[str, Any]] = []
        if self.use_knowledge_base and not error:
            sentences = cited_sentences(answer, len(sources))
            explicit = any(s.numbers for s in sentences)
            abstained = not sources or bool(self._state.get("gated")) or (is_abstention(answer) and not explicit)
            if not abstained:
                highlight_started = time.perf_counter()
                citations = self._citations(sentences, sources)
                self._timings["highlight_ms"] = _ms(highlight_started)
                answer, added = add_inferred_markers(answer, citations)
                if added:
                    self._trace["markers_added"] = added  # the model wrote no marker for these sentences
                grounded_started = time.perf_counter()
                groundedness = check_groundedness(
                    sentences, sources, embedder=self.engine.embedder_for_checks,
                    llm=self._state.get("llm", self.engine.llm) if self.engine.llm_groundedness else None)
                self._timings["groundedness_ms"] = _ms(grounded_started)
        self._timings.update(self._stage_timings())
        self._timings["total_ms"] = _ms(self._asked)
        fallback = "; ".join(r for r in (self.engine.llm_fallback_reason, self._state.get("fallback_reason", "")) if r)
        self._result = AnswerResult(
            question=self.question, answer=answer, abstained=abstained, citations=citations, sources=sources,
            reflection=reflection, groundedness=groundedness, timings=dict(self._timings), trace=self._trace_dict(),
            llm_backend=self._state.get("llm_backend", self.engine.llm_backend), fallback_reason=fallback,
            error=error, standalone_question=self.standalone_question, used_knowledge_base=self.use_knowledge_base)
        return self._result

    # -- helpers ------------------------------------------------------------------------------

    def _reflect(self, draft: str, sources: list[Source]) -> tuple[str, list[Source], list[dict[str, Any]]]:
        engine = self.engine
        llm = self._state.get("llm") or engine.llm

        def regenerate(query: str, config: RagConfig) -> tuple[str, list[Source], dict[str, Any]]:
            retrieval = engine.pipeline.retrieve(query, config, doc_ids=self._doc_ids())
            round_sources = engine.select_sources(retrieval, config)
            if not round_sources and query != self.standalone_question:  # the rewrite found nothing
                retrieval = engine.pipeline.retrieve(self.standalone_question, config, doc_ids=self._doc_ids())
                round_sources = engine.select_sources(retrieval, config)
            if not round_sources:
                return "", [], {"retrieval_ms": round(retrieval.trace.total_ms, 1)}
            text = "".join(engine.generate(build_answer_messages(self.standalone_question, round_sources),
                                           self._state)).strip()
            return text, round_sources, {"retrieval_ms": round(retrieval.trace.total_ms, 1)}

        best, rounds, outputs = reflect(llm, self.standalone_question, self.config, draft, sources, regenerate)
        answer, best_sources = outputs[best] if outputs and outputs[best][0] else (draft, sources)
        return answer, best_sources, rounds

    def _doc_ids(self) -> list[str] | None:
        return self._trace.get("doc_ids")

    def _citations(self, sentences: list, sources: list[Source]) -> list[Citation]:
        by_number = {s.n: s for s in sources}
        explicit = any(s.numbers for s in sentences)
        wanted: list[tuple[str, Source, bool]] = []
        for sentence in sentences:
            if sentence.numbers:
                wanted.extend((sentence.text, by_number[n], False) for n in sentence.numbers)
            else:
                inferred = infer_source(sentence.text, sources, min_overlap=0.6 if explicit else 0.4)
                if inferred is not None:
                    wanted.append((sentence.text, inferred, True))
        chunks = self.engine.store.keywords.get(list({s.chunk_id for _, s, _ in wanted}))
        pages_cache: dict[str, Any] = {}
        citations = []
        for sentence, source, inferred in wanted:
            quote = best_quote(sentence, source.text)
            chunk = chunks.get(source.chunk_id)
            located = []
            if chunk is not None:
                try:
                    if chunk.doc_id not in pages_cache:
                        pages_cache[chunk.doc_id] = self.engine.store.pages(chunk.doc_id)
                    located = locate_passage(self.engine.store, chunk, quote, pages=pages_cache[chunk.doc_id])
                except Exception as exc:  # noqa: BLE001 - a missing highlight must not lose the answer
                    logger.warning("highlight for %s failed: %s", source.chunk_id, exc)
            page = located[0][0] if located else source.page_start
            citations.append(Citation(
                n=source.n, doc_id=source.doc_id, file_name=source.file_name, page=int(page), text=quote,
                highlights=located[0][1] if located else [], chunk_id=source.chunk_id, sentence=sentence,
                pages=located, inferred=inferred))
        return citations

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
                trace["retrieval_details"] = self.retrieval.details
        if self.messages is not None:
            trace["prompt_chars"] = sum(len(m.content or "") for m in self.messages)
        llm = self._state.get("llm") or self.engine.llm
        stats = getattr(llm, "last_stats", None)
        if stats:
            trace["llm_stats"] = dict(stats)
        return trace


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 1)

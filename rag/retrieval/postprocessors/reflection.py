"""Reflection: the LLM grades whether the retrieved context can answer the question, and weak context is
retrieved again (wider, reworded, or both) before any answer is written.

Each round grades the passages the answer would be written from (what context fitting would keep) for
relevance, completeness and specificity, 1–10. While the best grade so far is below ``min_score`` and
rounds remain, the next round searches again with the strategy:

* ``expand``: more candidates, more passages and a larger context budget (``SearchQuery.expansion``);
* ``rewrite``: the query rewriter's rewordings of the question, a different one each round;
* ``both``: both at once.

A small model's grade may be unparseable: such a round is recorded as ``unscored`` and never crashes
the query. An unscored round neither stops nor starts a retry by itself: retries happen only while a
scored round is below the threshold. The best-graded round's passages go on; the rounds are in the
trace's ``details["reflection"]``.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, ClassVar, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from rag.retrieval.grading import Grade, grade_context
from rag.retrieval.nodes import node_text
from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import SearchQuery, as_search_query, question_is_broad, report
from rag.retrieval.trace import QueryTrace

logger = logging.getLogger(__name__)

Search = Callable[[SearchQuery], list[NodeWithScore]]


class ReflectionPostprocessor(TracedPostprocessor):
    """Grade the context, and search again while it grades below ``min_score``.

    Args:
        llm: The grading LLM (the answering model); None records that reflection could not run.
        search: Runs the retriever and the postprocessors before this one for a ``SearchQuery``.
        context: The context-fitting postprocessor (its ``fit`` picks the passages that are graded).
        rewriter: A ``QueryEnhancer`` for the rewrite strategy. Defaults to none (the question is reused).
        min_score: The grade (1–10) that ends the loop. Defaults to 7.
        max_rounds: Rounds at most, the first included. Defaults to 3.
        strategy: ``expand``, ``rewrite`` or ``both``. Defaults to ``both``.
    """

    stage_name: ClassVar[str] = "reflection"
    min_score: int = Field(default=7, ge=1, le=10)
    max_rounds: int = Field(default=3, ge=1, le=10)
    strategy: Literal["expand", "rewrite", "both"] = Field(default="both")
    _llm: Any = PrivateAttr()
    _search: Search = PrivateAttr()
    _context: Any = PrivateAttr()
    _rewriter: Any = PrivateAttr()

    def __init__(self, llm: Any, search: Search, context: Any, *, rewriter: Any = None, min_score: int = 7,
                 max_rounds: int = 3, strategy: str = "both", **kwargs: Any) -> None:
        super().__init__(min_score=min_score, max_rounds=max_rounds, strategy=strategy, **kwargs)
        self._llm = llm
        self._search = search
        self._context = context
        self._rewriter = rewriter

    @classmethod
    def class_name(cls) -> str:
        return "ReflectionPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        query = as_search_query(query_bundle)
        if self._llm is None:
            report(query, fallback="no LLM available; kept the passages as retrieved")
            return nodes
        rounds: list[dict[str, Any]] = []
        outputs: list[list[NodeWithScore]] = []
        current, search_text, expansion = nodes, query.query_str, query.expansion
        for number in range(1, self.max_rounds + 1):
            started = time.perf_counter()
            if number > 1:
                if self.strategy in ("rewrite", "both"):
                    search_text = self._reworded(query.query_str, number - 1)
                expansion = query.expansion + (number - 1 if self.strategy in ("expand", "both") else 0)
                round_query = query.derive(search_text, expansion=expansion, trace=QueryTrace(query=search_text))
                try:
                    current = self._search(round_query)
                except Exception as exc:  # noqa: BLE001 - keep the rounds we have
                    logger.warning("reflection round %d failed: %s", number, exc)
                    rounds.append(self._record(number, search_text, expansion, Grade(None, {}, f"round failed: {exc}"),
                                               [], started, failed=True))
                    outputs.append([])
                    break
            graded = self._context.fit(current, expansion, query.query_str, question_is_broad(query))
            grade = (grade_context(self._llm, query.query_str, [node_text(n, MetadataMode.LLM) for n in graded])
                     if graded else Grade(None, {}, "no passages were retrieved, so the context could not be graded"))
            rounds.append(self._record(number, search_text, expansion, grade, graded, started))
            outputs.append(current)
            scored = [r["score"] for r in rounds if r["score"] is not None]
            if not scored or max(scored) >= self.min_score:
                break
        best = max(range(len(rounds)), key=lambda i: (rounds[i]["score"] if rounds[i]["score"] is not None else -1, -i))
        for i, record in enumerate(rounds):
            record["selected"] = i == best
        query.trace.details["reflection"] = rounds
        chosen = outputs[best] or nodes
        score = rounds[best]["score"]
        report(query, note=f"{len(rounds)} round(s); kept round {best + 1} "
                           f"({'unscored' if score is None else f'score {score:g}'})")
        if len(rounds) > 1 or (score is not None and score < self.min_score):
            query.expansion = rounds[best]["expansion"]  # context fitting keeps what the chosen round graded
        return chosen

    def _reworded(self, question: str, retry: int) -> str:
        """The ``retry``-th rewording (the last one again when there are fewer), or the question itself."""
        if self._rewriter is None:
            return question
        variants = self._rewriter.rewrite(question).variants[1:]  # one LLM call, cached for later rounds
        return variants[min(retry, len(variants)) - 1] if variants else question

    @staticmethod
    def _record(number: int, query: str, expansion: int, grade: Grade, graded: list[NodeWithScore],
                started: float, failed: bool = False) -> dict[str, Any]:
        return {"round": number, "query": query, "expansion": expansion, "score": grade.score,
                "scores": grade.scores, "unscored": grade.score is None, "reason": grade.reason,
                "passages": [n.node.node_id for n in graded], "failed": failed,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1)}

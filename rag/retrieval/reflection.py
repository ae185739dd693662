"""Self-reflection: the LLM grades an answer 1–10 and weak answers are retried with more or different context.

The loop runs after the first (streamed) draft. Each round is graded for accuracy, completeness,
relevance and support by the sources; when the best grade so far is below ``reflection.min_score``
and rounds remain, the next round retrieves again with the configured strategy:

* ``expand``: more candidates and a larger top-k (and a larger context budget) each round;
* ``rewrite``: the LLM reformulates the question into a new search query;
* ``both``: both at once.

A small model's grade may be unparseable: such a round is recorded as ``unscored`` and never crashes
the loop. An unscored round neither stops nor starts a retry by itself: retries happen only while a
scored round is below the threshold. The best-scoring round's answer is returned.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from rag.answer.types import Source
from rag.answer.citations import format_sources
from rag.config import MAX_CANDIDATES, MAX_CONTEXT_TOKENS, RagConfig
from rag.prompts import REFLECTION_PROMPT, REWRITE_PROMPT

logger = logging.getLogger(__name__)

CRITERIA = ("accuracy", "completeness", "relevance", "support")
_NUMBER = r"(\d{1,2}(?:\.\d+)?)"
_CRITERION_RE = {name: re.compile(rf"{name}\w*\W{{0,6}}{_NUMBER}", re.IGNORECASE) for name in CRITERIA}
_OVERALL_RE = re.compile(rf"(?:overall|score|rating|grade)\w*\W{{0,6}}{_NUMBER}", re.IGNORECASE)
_OUT_OF_RE = re.compile(rf"{_NUMBER}\s*(?:/|out of)\s*10\b", re.IGNORECASE)
_REASON_RE = re.compile(r"reason\w*\s*[:：-]\s*(.+)", re.IGNORECASE)


@dataclass
class Grade:
    score: float | None  # None: the reply could not be parsed ("unscored")
    scores: dict[str, float] = field(default_factory=dict)
    reason: str = ""


def parse_grade(text: str) -> Grade:
    """Read a 1–10 grade from a model's reply; never raises.

    Per-criterion scores are averaged; otherwise an overall "score: 8" / "8/10" / a bare number is
    used. Values outside 1..10 are ignored.
    """
    text = text or ""
    scores: dict[str, float] = {}
    for name, pattern in _CRITERION_RE.items():
        match = pattern.search(text)
        if match and 1 <= float(match.group(1)) <= 10:
            scores[name] = float(match.group(1))
    score: float | None = None
    if scores:
        score = round(sum(scores.values()) / len(scores), 2)
    else:
        for pattern in (_OUT_OF_RE, _OVERALL_RE):
            match = pattern.search(text)
            if match and 1 <= float(match.group(1)) <= 10:
                score = float(match.group(1))
                break
        if score is None and re.fullmatch(rf"\s*{_NUMBER}\s*\.?\s*", text) and 1 <= float(text.strip(" .")) <= 10:
            score = float(text.strip(" ."))
    reason_match = _REASON_RE.search(text)
    reason = reason_match.group(1).strip() if reason_match else " ".join(text.split())[:200]
    return Grade(score, scores, reason[:300])


def grade_answer(llm: LLM, question: str, sources: Sequence[Source], answer: str, **kwargs: Any) -> Grade:
    """Ask ``llm`` to grade ``answer``; an LLM error gives an unscored grade with the error as reason."""
    prompt = REFLECTION_PROMPT.format(sources=format_sources(sources), question=question, answer=answer)
    try:
        reply = llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs).message.content or ""
    except Exception as exc:  # noqa: BLE001 - a failed grade must not sink the answer
        logger.warning("reflection grading failed: %s", exc)
        return Grade(None, {}, f"grading failed: {type(exc).__name__}: {exc}")
    return parse_grade(reply)


def rewrite_query(llm: LLM, question: str) -> str:
    """A reformulated search query, or the question itself when the LLM gives nothing usable."""
    try:
        reply = llm.chat([ChatMessage(role=MessageRole.USER, content=REWRITE_PROMPT.format(question=question))],
                         max_tokens=64).message.content or ""
    except Exception as exc:  # noqa: BLE001
        logger.warning("query rewrite failed: %s", exc)
        return question
    line = next((ln.strip().strip('"“”') for ln in reply.splitlines() if ln.strip()), "")
    line = re.sub(r"^(?:query|search query|查询)\s*[:：]\s*", "", line, flags=re.IGNORECASE)
    return line[:300] if len(line) >= 2 else question


def expanded_config(config: RagConfig, retry: int) -> RagConfig:
    """``retry``-th expansion (1-based): top-k and candidates grow, and so does the context budget.

    Growth stops at each setting's ceiling (``rag.config``), since a config outside its bounds cannot be built.
    """
    r, g = config.retrieval, config.generation
    top_k = min(100, r.top_k * (1 + retry))
    candidate_k = min(MAX_CANDIDATES, max(r.candidate_k * (2 ** retry), top_k))
    budget = min(MAX_CONTEXT_TOKENS, int(g.max_context_tokens * (1 + 0.5 * retry)))
    return replace(config, retrieval=replace(r, top_k=top_k, candidate_k=candidate_k),
                   generation=replace(g, max_context_tokens=budget))


# regenerate(query, config) -> (answer, sources, details) for one retry round
Regenerate = Callable[[str, RagConfig], tuple[str, list[Source], dict[str, Any]]]


def reflect(llm: LLM, question: str, config: RagConfig, draft: str, draft_sources: list[Source],
            regenerate: Regenerate) -> tuple[int, list[dict[str, Any]], list[tuple[str, list[Source]]]]:
    """Run the loop from a finished draft.

    Returns:
        (index of the best round, one record per round, (answer, sources) per round).
    """
    settings = config.reflection
    rounds: list[dict[str, Any]] = []
    outputs: list[tuple[str, list[Source]]] = []
    answer, sources, query, round_config = draft, draft_sources, question, config
    strategy = "draft"
    for number in range(1, settings.max_rounds + 1):
        started = time.perf_counter()
        extra: dict[str, Any] = {}
        if number > 1:
            retry = number - 1
            strategy = settings.strategy
            round_config = expanded_config(config, retry) if strategy in ("expand", "both") else config
            query = rewrite_query(llm, question) if strategy in ("rewrite", "both") else question
            try:
                answer, sources, extra = regenerate(query, round_config)
            except Exception as exc:  # noqa: BLE001 - keep the rounds we have
                logger.warning("reflection round %d failed: %s", number, exc)
                rounds.append(_record(number, strategy, query, round_config, Grade(None, {}, f"round failed: {exc}"),
                                      "", [], started, failed=True))
                outputs.append(("", []))
                break
        grade = grade_answer(llm, question, sources, answer) if sources else Grade(
            None, {}, "no sources were retrieved, so the answer could not be graded")
        rounds.append(_record(number, strategy, query, round_config, grade, answer, sources, started, **extra))
        outputs.append((answer, sources))
        scored = [r["score"] for r in rounds if r["score"] is not None]
        if not scored or max(scored) >= settings.min_score:
            break
    best = max(range(len(rounds)), key=lambda i: (rounds[i]["score"] if rounds[i]["score"] is not None else -1,
                                                  -i))
    for i, record in enumerate(rounds):
        record["selected"] = i == best
    return best, rounds, outputs


def _record(number: int, strategy: str, query: str, config: RagConfig, grade: Grade, answer: str,
            sources: Sequence[Source], started: float, failed: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "round": number, "strategy": strategy, "query": query, "top_k": config.retrieval.top_k,
        "candidate_k": config.retrieval.candidate_k, "score": grade.score, "scores": grade.scores,
        "unscored": grade.score is None, "reason": grade.reason, "answer": answer,
        "sources": [s.chunk_id for s in sources], "failed": failed,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1), **extra,
    }

"""Reading a 1–10 grade out of whatever a small model replied, and asking for one.

The model is asked for per-criterion scores; per-criterion scores are averaged, otherwise an overall
"score: 8", "8/10" or a bare number is used. A reply with no usable number is "unscored" and never
raises: a small model's output must not sink the query.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.prompts import CONTEXT_GRADE_PROMPT, format_sources

logger = logging.getLogger(__name__)

CRITERIA = ("relevance", "completeness", "specificity", "accuracy", "support")
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
    """Read a 1–10 grade from a model's reply; never raises. Values outside 1..10 are ignored."""
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


def grade_context(llm: Any, question: str, passages: Sequence[str], **kwargs: Any) -> Grade:
    """Ask ``llm`` how well ``passages`` answer ``question``; an LLM error gives an unscored grade saying why."""
    prompt = CONTEXT_GRADE_PROMPT.format(sources=format_sources(list(enumerate(passages, start=1))),
                                         question=question)
    try:
        reply = llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs).message.content or ""
    except Exception as exc:  # noqa: BLE001 - a failed grade must not sink the query
        logger.warning("reflection grading failed: %s", exc)
        return Grade(None, {}, f"grading failed: {type(exc).__name__}: {exc}")
    return parse_grade(reply)

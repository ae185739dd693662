"""Asking an evaluation library's questions and scoring the answers against gold, never against the verifier.

Per question (a row): the answer, whether it abstained and what refused (the gate, the claim verifier or
the model itself), and gold checks that share no code with ``rag.answer.verify``:

* ``right``: an answerable question's answer contains a gold answer (SQuAD normalisation; CMRC-style for
  Chinese).
* ``unsupported``: a shown (not abstained) answer whose claim the library does not back: any shown answer
  to an unanswerable question (its paragraph is in the library and does not hold the answer), and a shown
  answer to an answerable one unless it contains a gold answer that a cited chunk also contains. This is
  strict: a faithful paraphrase of the gold counts as unsupported.
* ``highlight_gold_span``: for right answers, a citation on the gold paragraph's page whose highlighted
  passage contains the gold answer.

Aggregates: abstention on unanswerables, false abstention, answered-and-right, unsupported rate among
shown answers, TTFT p50/p95, whole answer (with verification) p50/p95, tokens/s.
"""

from __future__ import annotations

import logging
from statistics import median
from typing import Any, Sequence

from rag.answer.citations import strip_markers
from rag.evaluation.answer_library import QAItem
from rag.evaluation.answer_metrics import contains_answer, exact_match, f1_score
from rag.text.language import detect_language

logger = logging.getLogger(__name__)


def refused_by(result: Any) -> str:
    """What made an abstention: "gate", "verification", "confidence", "no sources", "model" ("" when answered)."""
    if not result.abstained:
        return ""
    if (result.trace.get("answerability") or {}).get("answerable") is False:
        return "gate"
    if result.trace.get("refused_by_verification"):
        return "verification"
    if result.trace.get("refused_by_confidence"):
        return "confidence"
    if not result.sources:
        return "no sources"
    return "model"


def ask(engine: Any, item: QAItem, unanswerable: bool, gold_locations: dict[str, set[tuple[str, int]]],
        store: Any) -> dict[str, Any]:
    """Ask one question through the engine and score it against gold."""
    result = engine.answer(item.question)
    chinese = detect_language(item.question) == "zh"
    text = strip_markers(result.answer)
    row: dict[str, Any] = {
        "qid": item.qid, "question": item.question, "unanswerable": unanswerable, "gold": item.answers[:3],
        "answer": result.answer, "draft": result.draft, "abstained": result.abstained,
        "refused_by": refused_by(result), "error": result.error,
        "ttft_ms": result.timings.get("ttft_ms"), "total_ms": result.timings.get("total_ms"),
        "verify_ms": result.timings.get("verify_ms"), "tokens_per_s": result.timings.get("tokens_per_s"),
        "prompt_tokens_evaluated": result.timings.get("prompt_tokens_evaluated"),
        "answerability": result.trace.get("answerability"), "verification": result.verification,
        # how sure the model was of its answer's first phrase (rag.answer.confidence); None when not generated
        "confidence": result.trace.get("answer_confidence"),
        "citations": [(c.n, c.page) for c in result.citations],
    }
    if not unanswerable:
        # separates "the evidence lacked the answer" (retrieval, fitting) from a refusal by the model or verifier
        row["gold_in_evidence"] = any(contains_answer(s.text, item.answers, chinese) for s in result.sources)
        # ``draft`` is set only when verification changed the answer; otherwise the answer is the draft
        row["gold_in_draft"] = contains_answer(strip_markers(result.draft or result.answer), item.answers, chinese)
    if result.abstained:
        return row
    if unanswerable:
        row["unsupported"] = True
        return row
    chunk_ids = [c.chunk_id for c in result.citations]
    chunks = store.keywords.get(chunk_ids) if chunk_ids else {}
    right = contains_answer(text, item.answers, chinese)
    cited_gold = any(contains_answer(chunks[c].text, item.answers, chinese) for c in chunk_ids if c in chunks)
    gold_pages = gold_locations.get(item.para_key, set())
    row.update({
        "right": right, "unsupported": not (right and cited_gold),
        "em": exact_match(text, item.answers, chinese), "f1": round(f1_score(text, item.answers, chinese), 3),
        "highlight_gold_span": right and any(
            any((c.doc_id, p) in gold_pages for p, rects in (c.pages or [(c.page, c.highlights)]) if rects)
            and contains_answer(c.text, item.answers, chinese) for c in result.citations),
    })
    return row


def ask_all(engine: Any, answerable: Sequence[QAItem], unanswerable: Sequence[QAItem],
            gold_locations: dict[str, set[tuple[str, int]]], store: Any) -> list[dict[str, Any]]:
    rows = []
    questions = [(item, False) for item in answerable] + [(item, True) for item in unanswerable]
    for number, (item, impossible) in enumerate(questions, start=1):
        row = ask(engine, item, impossible, gold_locations, store)
        rows.append(row)
        logger.info("%d/%d %s abstained=%s (%s) right=%s ttft=%.0fms total=%.0fms", number, len(questions),
                    "unanswerable" if impossible else "answerable", row["abstained"], row["refused_by"] or "-",
                    row.get("right"), row["ttft_ms"] or 0.0, row["total_ms"] or 0.0)
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures the issue asks for, from the rows of one run."""
    answerable = [r for r in rows if not r["unanswerable"]]
    impossible = [r for r in rows if r["unanswerable"]]
    shown = [r for r in rows if not r["abstained"]]
    right = [r for r in answerable if r.get("right")]
    generated = [r for r in rows if r["refused_by"] not in ("gate", "no sources")]
    refusals: dict[str, int] = {}
    for r in answerable:
        if r["abstained"]:
            refusals[r["refused_by"]] = refusals.get(r["refused_by"], 0) + 1
    return {
        "answerable": len(answerable), "unanswerable": len(impossible),
        "abstention": share_of(sum(r["abstained"] for r in impossible), len(impossible)),
        "false_abstention": share_of(sum(r["abstained"] for r in answerable), len(answerable)),
        "false_abstention_by": refusals,
        # of the false abstentions, how many had a gold answer in the fitted evidence the model saw
        "false_abstention_gold_in_evidence": sum(1 for r in answerable if r["abstained"] and r.get("gold_in_evidence")),
        "gold_in_evidence": share_of(sum(bool(r.get("gold_in_evidence")) for r in answerable), len(answerable)),
        "answered_and_right": share_of(len(right), len(answerable)),
        "unsupported_rate": share_of(sum(bool(r.get("unsupported")) for r in shown), len(shown)),
        "shown": len(shown),
        "highlight_gold_span": share_of(sum(bool(r.get("highlight_gold_span")) for r in right), len(right)),
        "f1": share_of(sum(r.get("f1", 0.0) for r in answerable), len(answerable)),
        "ttft_ms_p50": _pct([r["ttft_ms"] for r in rows], 50), "ttft_ms_p95": _pct([r["ttft_ms"] for r in rows], 95),
        "ttft_ms_p50_generated": _pct([r["ttft_ms"] for r in generated], 50),
        "total_ms_p50": _pct([r["total_ms"] for r in rows], 50), "total_ms_p95": _pct([r["total_ms"] for r in rows], 95),
        "tokens_per_s": _median([r["tokens_per_s"] for r in rows if r.get("tokens_per_s")]),
        "errors": sum(bool(r["error"]) for r in rows),
    }


def share_of(part: float, whole: int) -> float | None:
    """``part / whole`` rounded to 4 places; None for an empty whole."""
    return round(part / whole, 4) if whole else None


def _median(values: list[float]) -> float | None:
    return round(median(values), 2) if values else None


def _pct(values: list[Any], q: int) -> float | None:
    """The q-th percentile (nearest rank) of the non-missing values."""
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    rank = max(1, -(-q * len(data) // 100))
    return round(float(data[rank - 1]), 1)

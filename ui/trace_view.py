"""The per-stage retrieval trace of an answer: a candidate table and a chart of stage timings.

File names, fallback reasons and errors in the trace come from documents, presets and servers: they
are escaped (captions render Markdown) or shown with their invisible characters spelled out (tables).
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd
import streamlit as st

from rag.answer.types import AnswerResult
from rag.config import RagConfig
from ui.safe_text import label, plain

# answer-side timings worth a bar of their own (aggregates like total_ms and ttft_ms are left out)
ANSWER_STAGES = ("condense", "route", "answer_check", "generation", "reflection", "highlight", "groundedness")


def candidate_frame(trace: Mapping[str, Any], sources: Any = ()) -> pd.DataFrame:
    """One row per candidate per retrieval stage: stage, rank, chunk, document, page, score, source."""
    numbers = {s.chunk_id: s.n for s in sources}
    rows = []
    for stage in (trace.get("retrieval") or {}).get("stages", []):
        for c in stage.get("candidates", []):
            rows.append({"stage": stage["name"], "rank": c["rank"], "chunk": c["chunk_id"],
                         "document": plain(c["file_name"]), "page": c["page"],
                         "score": None if c["score"] is None else round(float(c["score"]), 4),
                         "source": f"[{numbers[c['chunk_id']]}]" if c["chunk_id"] in numbers else ""})
    return pd.DataFrame(rows, columns=["stage", "rank", "chunk", "document", "page", "score", "source"])


def timing_frame(result: AnswerResult) -> pd.DataFrame:
    """Milliseconds per stage, in the order the stages ran (retrieval stages first)."""
    durations: dict[str, float] = {}
    for stage in (result.trace.get("retrieval") or {}).get("stages", []):
        durations[stage["name"]] = durations.get(stage["name"], 0.0) + float(stage["duration_ms"])
    for name in ANSWER_STAGES:
        value = result.timings.get(f"{name}_ms")
        if isinstance(value, (int, float)):
            durations[name] = float(value)
    return pd.DataFrame({"stage": list(durations), "ms": [round(v, 1) for v in durations.values()]})


def stage_notes(trace: Mapping[str, Any]) -> list[str]:
    """Why stages degraded or failed, and what the final stage kept, one line each (Markdown, escaped)."""
    notes = []
    for stage in (trace.get("retrieval") or {}).get("stages", []):
        for kind, text in (("fallback", stage.get("fallback_reason")), ("error", stage.get("error"))):
            if text:
                notes.append(f"{stage['name']} {kind}: {label(text)}")
        if stage["name"] == "final":
            notes.extend(f"final: {label(note)}" for note in stage.get("notes", []))
    for doc in ((trace.get("retrieval") or {}).get("details") or {}).get("keyword_only", []):
        stopped = f"; embedding stopped: {label(doc['error'])}" if doc.get("error") else ""
        notes.append(f"keyword-only for now: {label(doc['file_name'])} — {int(doc['embedded'])} of "
                     f"{int(doc['total'])} vectors are stored, so vector search sees only those chunks{stopped}")
    if trace.get("retrieval_cached"):
        notes.append("retrieval came from the result cache (same question and settings)")
    return notes


def settings_summary(config: RagConfig) -> dict[str, Any]:
    """The retrieval and answer settings an answer was produced with, as plain data."""
    r = config.retrieval
    return {
        "top_k": r.top_k, "candidate_k": r.candidate_k, "similarity_threshold": r.similarity_threshold,
        "sources": r.sources, "fusion": r.fusion, "vector_weight": r.vector_weight,
        "second_vector_weight": r.second_vector_weight, "keyword_weight": r.keyword_weight,
        "rerank": config.rerank.enabled, "mmr": config.mmr.enabled, "mmr_lambda": config.mmr.lambda_mult,
        "rewrite": config.query.rewrite, "hyde": config.query.hyde, "reflection": config.reflection.enabled,
        "max_context_tokens": config.generation.max_context_tokens,
    }


def stage_counts(trace: Mapping[str, Any]) -> str:
    """"vector 30 · bm25 30 · fusion 30 · final 5": how many candidates each stage passed on."""
    stages = (trace.get("retrieval") or {}).get("stages", [])
    return " · ".join(f"{stage['name']} {len(stage.get('candidates', []))}" for stage in stages)


def _format_setting(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def render_trace(result: AnswerResult) -> None:
    """The "Retrieval trace" expander."""
    with st.expander("Retrieval trace"):
        settings = result.trace.get("settings")
        if settings:
            st.caption("Settings: " + " · ".join(f"{k} {label(_format_setting(v))}" for k, v in settings.items()))
        counts = stage_counts(result.trace)
        if counts:
            st.caption(f"Candidates per stage: {counts}")
        if not result.used_knowledge_base:
            st.caption("Answered without searching the documents.")
        if result.standalone_question and result.standalone_question != result.question:
            st.caption("Searched for:")
            st.text(result.standalone_question)
        rejected = result.trace.get("condense_rejected")
        if rejected:
            st.caption(label(f"The follow-up's rewording was set aside ({result.trace.get('condense_rejected_why', '')}); "
                             "searched for the question as asked. The rewording:"))
            st.text(rejected)
        kind = result.trace.get("question_kind")
        if kind:
            st.caption(question_kind_line(kind))
        for note in stage_notes(result.trace):
            st.caption(note)
        candidates = candidate_frame(result.trace, result.sources)
        if not candidates.empty:
            st.dataframe(candidates, hide_index=True, width="stretch")
        timings = timing_frame(result)
        if not timings.empty:
            st.bar_chart(timings, x="stage", y="ms", x_label="", y_label="ms", horizontal=True, sort=False,
                         height=chart_height(len(timings)))
        st.caption(label(timing_summary(result)))


def question_kind_line(kind: Mapping[str, Any]) -> str:
    """How the question was read: one fact, or an explanation (whole passages, the broad rules and checks)."""
    what = ("asking for an explanation, summary or comparison (whole passages, the broad rules and checks)"
            if kind.get("broad") else "asking for one fact (sentence-level evidence, the answerability gate)")
    how = "as asked (Answer as an explanation)" if kind.get("read_by") == "user" else "by its wording"
    return f"Read as {what}, {how}."


def chart_height(bars: int) -> int:
    """Tall enough that Vega-Lite does not drop stage labels as overlapping."""
    return 70 + 30 * bars


def timing_summary(result: AnswerResult) -> str:
    t = result.timings
    parts = [f"sources {t.get('sources_ms', 0):.0f} ms" if result.used_knowledge_base else "",
             f"first token {t.get('ttft_ms', 0) / 1000:.1f} s",
             f"{t.get('tokens', 0)} tokens at {t.get('tokens_per_s', 0):.1f} tok/s",
             f"total {t.get('total_ms', 0) / 1000:.1f} s", f"LLM: {result.llm_backend}" if result.llm_backend else ""]
    return " · ".join(p for p in parts if p)

"""Compare page pieces: choosing a setting (preset or current, edited in place) and showing two
answers side by side with the sources that differ marked.

Preset names come from uploaded files and answers from the model: both are shown through
``ui.safe_text``, never as live Markdown.
"""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd
import streamlit as st

from rag.answer.types import AnswerResult
from rag.config import ConfigError, RagConfig, setting_specs
from rag.presets import PresetError
from ui.answer_view import (
    render_citation_viewer,
    render_groundedness,
    render_reflection,
    render_sources,
    source_line,
)
from ui.resources import base_config
from ui.safe_text import escape_markdown, label, plain, show_answer
from ui.state import current_config, preset_store
from ui.trace_view import candidate_frame, render_trace, timing_frame, timing_summary

CURRENT = "Current settings"

# the knobs editable in place, with their labels; type, bounds, choices and help come from the config's
# own description (rag.config.setting_specs), like the Settings form
KNOBS: dict[str, str] = {
    "retrieval.top_k": "Top-k",
    "retrieval.sources": "Retrievers",
    "retrieval.fusion": "Fusion",
    "retrieval.vector_weight": "Vector weight",
    "retrieval.second_vector_weight": "Second English embedder weight",
    "retrieval.keyword_weight": "Keyword weight",
    "retrieval.similarity_threshold": "Similarity threshold",
    "mmr.enabled": "MMR diversity",
    "mmr.lambda_mult": "MMR λ (relevance vs diversity)",
    "rerank.enabled": "Cross-encoder rerank",
    "query.rewrite": "Query rewrite",
    "query.hyde": "HyDE",
    "reflection.enabled": "Reflection",
    "reflection.min_score": "Reflection min score",
    "generation.temperature": "Temperature",
}


def _get(config: RagConfig, dotted: str) -> Any:
    section, name = dotted.split(".")
    return getattr(getattr(config, section), name)


def choose_settings(side: str) -> tuple[str, RagConfig | None]:
    """A preset (or the current settings) for ``side`` with the knobs above editable; None if invalid."""
    names = [CURRENT, *preset_store().names()]
    default = names.index("Vector only") if side == "B" else 0  # a built-in, always listed
    name = st.selectbox(f"Settings {side}", names, index=default, key=f"compare_{side}_preset", format_func=plain)
    try:
        base = current_config() if name == CURRENT else preset_store().load(name, base_config())
    except PresetError as exc:
        st.error(f"{escape_markdown(str(exc))} — choose another preset, or re-save it on the Settings page.")
        return name, None
    overrides = {}
    specs = setting_specs()
    with st.expander(f"Edit {side}"):
        for dotted, label in KNOBS.items():
            spec, value = specs[dotted], _get(base, dotted)
            key = f"compare_{side}_{name}_{dotted}"  # per preset: choosing another preset resets the knobs
            if spec.kind == "bool":
                new = st.toggle(label, value=value, key=key, help=spec.help)
            elif spec.kind == "choice":
                new = st.selectbox(label, spec.choices, index=list(spec.choices).index(value), key=key, help=spec.help)
            elif spec.kind == "int":
                new = st.number_input(label, min_value=int(spec.minimum), max_value=int(spec.maximum), value=int(value),
                                      step=1, key=key, help=spec.help)
            else:
                new = st.slider(label, min_value=float(spec.minimum), max_value=float(spec.maximum), value=float(value),
                                step=0.05, key=key, help=spec.help)
            if new != value:
                overrides[dotted] = new
    try:
        return name, base.with_overrides(overrides) if overrides else base
    except ConfigError as exc:
        st.error(f"Settings {side} are not valid: {escape_markdown(str(exc))}")
        return name, None


def differences_frame(a: RagConfig, b: RagConfig) -> pd.DataFrame:
    from rag.presets import changed_fields

    rows = [{"setting": k, "A": plain(str(va)), "B": plain(str(vb))} for k, (va, vb) in changed_fields(a, b).items()]
    return pd.DataFrame(rows, columns=["setting", "A", "B"])


def source_marks(mine: AnswerResult | None, other: AnswerResult | None, other_side: str) -> dict[str, str]:
    """Badges for the sources of ``mine`` that ``other`` did not use."""
    if mine is None:
        return {}
    theirs = {s.chunk_id for s in other.sources} if other is not None else set()
    return {s.chunk_id: f"not in {other_side}" for s in mine.sources if s.chunk_id not in theirs}


def render_side(title: str, outcome: dict[str, Any], store: Any, *, marks: dict[str, str], key: str) -> None:
    """One side's answer and everything under it; ``title`` is plain text (it may hold a preset name)."""
    st.subheader(label(title))
    if outcome.get("error"):
        st.error(escape_markdown(outcome["error"]))
        return
    result: AnswerResult = outcome["result"]
    show_answer(result.answer)
    if result.error:
        st.error(escape_markdown(result.error))
    render_reflection(result)
    render_groundedness(result)
    st.caption(label(timing_summary(result)))
    if result.sources:
        differing = sum(1 for s in result.sources if s.chunk_id in marks)
        st.caption(f"{len(result.sources)} sources, {differing} not used by the other side")
        for source in result.sources:
            st.markdown(source_line(source, marks))
        render_sources(result.sources)
    if result.citations:
        render_citation_viewer(result.citations, store, key=key)
    render_trace(result)


def summary_frame(results: Sequence[tuple[str, AnswerResult | None]]) -> pd.DataFrame:
    """Side-by-side numbers: sources, reflection score, unsupported sentences, timings."""
    rows: dict[str, dict[str, Any]] = {}
    for side, result in results:
        if result is None:
            continue
        kept = next((r for r in result.reflection if r.get("selected")), None)
        t = result.timings
        rows[side] = {
            "sources": len(result.sources), "citations": len(result.citations),
            "reflection score": None if kept is None else kept.get("score"),
            "unsupported sentences": sum(1 for g in result.groundedness if not g["supported"]),
            "retrieval ms": t.get("retrieval_ms"), "first token ms": t.get("ttft_ms"), "total ms": t.get("total_ms"),
        }
    return pd.DataFrame(rows)


def timings_by_side(results: Sequence[tuple[str, AnswerResult | None]]) -> pd.DataFrame:
    frames = [timing_frame(r).set_index("stage")["ms"].rename(side) for side, r in results if r is not None]
    return pd.concat(frames, axis=1).fillna(0.0) if frames else pd.DataFrame()


def top_scores_by_side(results: Sequence[tuple[str, AnswerResult | None]]) -> pd.DataFrame:
    """The best candidate score each stage produced, per side."""
    columns = {}
    for side, result in results:
        if result is None:
            continue
        table = candidate_frame(result.trace, result.sources)
        if not table.empty:
            columns[side] = table.groupby("stage", sort=False)["score"].max()
    return pd.DataFrame(columns)

"""Evaluation results on screen: metrics side by side, the Recall@k curve and the latency histogram."""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import altair as alt
import pandas as pd
import streamlit as st

from rag.evaluation.run import CURVE_KS, EvalRun, latency_histogram, metrics_table
from ui.safe_text import escape_markdown, label

RESULTS_KEY = "eval_results"


def phase_progress(bar: Any, start: float, end: float) -> Callable[[float, str], None]:
    """A ``(fraction, message)`` callback drawing one phase of the run into ``[start, end]`` of ``bar``."""

    def report(fraction: float, message: str) -> None:
        bar.progress(min(1.0, start + (end - start) * max(0.0, min(1.0, fraction))), text=label(message))

    return report


def metrics_frame(runs: Sequence[EvalRun]) -> pd.DataFrame:
    table = metrics_table(runs)
    frame = pd.DataFrame.from_dict(table, orient="index")[[run.label for run in runs]]
    frame.index.name = "metric"
    return frame


def recall_frame(runs: Sequence[EvalRun]) -> pd.DataFrame:
    frame = pd.DataFrame({run.label: run.recall_curve for run in runs}, index=list(CURVE_KS))
    frame.index.name = "k"
    return frame


def latency_frame(runs: Sequence[EvalRun], bins: int = 20) -> pd.DataFrame:
    """Long format (bin, settings, questions) with bins in latency order."""
    labels, counts = latency_histogram(runs, bins=bins)
    return pd.DataFrame([{"bin": label, "settings": name, "questions": values[i]}
                         for name, values in counts.items() for i, label in enumerate(labels)])


def latency_chart(runs: Sequence[EvalRun]) -> alt.Chart:
    """Grouped bars per latency bin; the bins keep their numeric order (a plain bar chart sorts labels as text)."""
    frame = latency_frame(runs)
    order = list(dict.fromkeys(frame["bin"])) if not frame.empty else []
    return alt.Chart(frame).mark_bar().encode(
        x=alt.X("bin:N", sort=order, title="retrieval latency (ms)"),
        xOffset=alt.XOffset("settings:N"),
        y=alt.Y("questions:Q", title="questions"),
        color=alt.Color("settings:N", legend=alt.Legend(orient="bottom", title=None)),
        tooltip=["settings", "bin", "questions"],
    )


def show_results(results: dict[str, Any]) -> None:
    """Render a finished comparison (kept in session state, so it survives reruns)."""
    runs: list[EvalRun] = results["runs"]
    st.subheader(f"Results on {label(results['dataset'])} ({runs[0].n_queries} questions)")
    for message in results.get("notes", []):
        st.info(escape_markdown(message))
    st.dataframe(metrics_frame(runs), width="stretch", height="content")
    st.caption("Rankings go 20 deep whatever top-k is; recall@top_k is recall at each setting's own top-k, "
               "the passages the chat would see. Latency is retrieval only (no answer generation).")
    left, right = st.columns(2)
    with left:
        st.markdown("**Recall@k**")
        st.line_chart(recall_frame(runs), x_label="k", y_label="recall@k")
    with right:
        st.markdown("**Retrieval latency**")
        st.altair_chart(latency_chart(runs), width="stretch")
    for run in runs:
        if run.notes:
            st.caption(label(f"{run.label}: " + "; ".join(run.notes)))
    st.download_button("Download results (JSON)",
                       json.dumps({"dataset": results["dataset"], "runs": [r.to_dict() for r in runs]},
                                  ensure_ascii=False, indent=1),
                       file_name=f"citewise-eval-{results['dataset']}.json", mime="application/json")

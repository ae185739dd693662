"""Compare: one question answered under two settings, side by side."""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: a page can run before app.py, see ui/preload.py)
import streamlit as st

from ui.answer_view import stream_answer
from ui.compare_view import (
    choose_settings,
    differences_frame,
    render_side,
    source_marks,
    summary_frame,
    timings_by_side,
    top_scores_by_side,
)
from ui.navigation import set_up_navigation
from ui.resources import get_store
from ui.safe_text import label
from ui.state import current_config
from ui.trace_view import chart_height

set_up_navigation()  # before anything is drawn: see ui/navigation.py

RESULTS_KEY = "compare_results"

store = get_store(current_config())
st.title("Compare")
if not store.searchable_ids():
    st.info("No documents are indexed yet. Add some on the Documents page, then compare settings here.",
            icon=":material/info:")
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")
    st.stop()

left, right = st.columns(2)
with left:
    name_a, config_a = choose_settings("A")
with right:
    name_b, config_b = choose_settings("B")
if config_a is not None and config_b is not None:
    differences = differences_frame(config_a, config_b)
    if differences.empty:
        st.caption("A and B are the same settings.")
    else:
        st.dataframe(differences, hide_index=True, width="stretch")

with st.form("compare_form", border=False):
    question = st.text_input("Question", key="compare_question", placeholder="Ask about your documents")
    run = st.form_submit_button("Compare", type="primary", disabled=config_a is None or config_b is None)

if run and question.strip():
    outcomes = {}
    for side, name, config, column in (("A", name_a, config_a, left), ("B", name_b, config_b, right)):
        with column:
            st.subheader(label(f"{side} · {name}"))
            outcome = stream_answer(config, question)
        outcomes[side] = {"name": name, "result": outcome.result, "error": outcome.error}
    st.session_state[RESULTS_KEY] = {"question": question, **outcomes}
    st.rerun()  # draw both sides from the stored results, with the differing sources marked
elif run:
    st.error("Type a question to compare the two settings on.")

shown = st.session_state.get(RESULTS_KEY)
if shown:
    st.divider()
    st.caption("Question:")
    st.text(shown["question"])
    a, b = shown["A"], shown["B"]
    results = [("A", a["result"]), ("B", b["result"])]
    columns = st.columns(2)
    for column, (side, outcome), other_side, other in ((columns[0], ("A", a), "B", b), (columns[1], ("B", b), "A", a)):
        with column:
            render_side(f"{side} · {outcome['name']}", outcome, store,
                        marks=source_marks(outcome["result"], other["result"], other_side), key=f"compare_{side}")
    summary = summary_frame(results)
    if not summary.empty:
        st.subheader("Side by side")
        st.dataframe(summary, width="stretch")
        timings = timings_by_side(results)
        if not timings.empty:
            st.caption("Stage timings (ms)")
            st.bar_chart(timings, x_label="", y_label="ms", stack=False, horizontal=True, sort=False,
                         height=chart_height(2 * len(timings)))
        scores = top_scores_by_side(results)
        if not scores.empty:
            st.caption("Best candidate score per stage")
            st.dataframe(scores, width="stretch")

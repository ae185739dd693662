"""Showing one answer: streaming it, its sources, the citation viewer with the highlighted page,
reflection's context grades and groundedness flags. Shared by the Chat and Compare pages.

Document text (sources, quotes) is data: it goes through ``st.text`` or escaped Markdown, never HTML.
The answer is the model's Markdown, which may echo a hostile document: it is shown through
``ui.safe_text`` (links, images and HTML as text), also while it streams. File names are escaped and
their invisible characters spelled out wherever they appear.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from rag.answer.types import AnswerResult, ChatTurn, Citation, Source
from rag.config import RagConfig
from rag.models.turns import listen_for_turns
from ui.resources import get_engine, page_image
from ui.safe_text import escape_markdown, label, plain, stream_answer_text
from ui.trace_view import render_trace, settings_summary, timing_summary

logger = logging.getLogger(__name__)


def pages_label(start: int, end: int) -> str:
    return f"p. {start}" if end <= start else f"pp. {start}–{end}"


@dataclass
class Outcome:
    """One attempt to answer: the result, or why there is no answer."""

    result: AnswerResult | None = None
    error: str = ""


def show_model_wait(answer: Callable[..., Outcome]) -> Callable[..., Outcome]:
    """``answer`` showing "Waiting for the model (N questions ahead)…" while it waits for the shared model.

    Every session shares the one embedded model and its calls take turns (``rag.models.turns``); the
    notice sits where the answer will start and goes away when the model is free. Model calls made on a
    helper thread (query rewrite, HyDE) cannot draw on the page, so only this script's own waits show.
    """

    @functools.wraps(answer)
    def answering(*args: Any, **kwargs: Any) -> Outcome:
        slot = st.empty()
        script = get_script_run_ctx()

        def show(ahead: int) -> None:
            if get_script_run_ctx(suppress_warning=True) is not script:
                return
            if ahead:
                slot.info(f"Waiting for the model ({ahead} question{'' if ahead == 1 else 's'} ahead)…",
                          icon=":material/hourglass_top:")
            else:
                slot.empty()

        try:
            with listen_for_turns(show):
                return answer(*args, **kwargs)
        finally:
            slot.empty()  # a wait that ended in an error leaves no stale notice above the message

    return answering


@show_model_wait
def stream_answer(config: RagConfig, question: str, *, history: Sequence[ChatTurn] = (),
                  doc_ids: Sequence[str] | None = None, use_knowledge_base: bool = True,
                  marks: dict[str, str] | None = None, skip_gate: bool = False, broad: bool | None = None) -> Outcome:
    """Retrieve (and reflect, when on), show the sources at once, stream the answer, then finish it
    (citations, highlights, groundedness).

    Errors are shown with ``st.error`` and returned in ``Outcome.error``; nothing raises.
    """
    from rag.models.llm_openai import LLMUnavailableError
    from rag.retrieval.query import QueryError

    try:
        label = "Preparing the answer…" if not use_knowledge_base else (
            "Searching your documents and grading what was found (reflection)…" if config.reflection.enabled
            else "Searching your documents…")
        with st.status(label, expanded=False) as status:
            engine = get_engine(config)
            stream = engine.stream(question, history=history, doc_ids=doc_ids,
                                   use_knowledge_base=use_knowledge_base, skip_gate=skip_gate, broad=broad)
            found = f"{len(stream.sources)} sources found" if use_knowledge_base else "Knowledge base off"
            status.update(label=found, state="complete")
    except QueryError as exc:
        return _failed(str(exc))
    except LLMUnavailableError as exc:
        return _failed(f"{exc} — check the LLM settings on the Settings page.")
    except Exception as exc:  # noqa: BLE001 - the page shows a message, never a traceback
        logger.exception("answering failed before the first token")
        return _failed(f"Could not answer ({type(exc).__name__}: {exc}). The server log has the details.")
    if stream.sources:
        render_sources(stream.sources, marks=marks)
    try:
        if use_knowledge_base and stream.sources:
            st.caption(":material/pending: Draft — checking each claim against the source it cites…")
        # every redraw goes through safe_markdown: the raw tokens may echo a document's links and images
        stream_answer_text(iter(stream))
        with st.spinner("Checking each claim against its source…"):
            result = stream.result()
    except Exception as exc:  # noqa: BLE001
        logger.exception("answering failed while streaming")
        return _failed(f"The answer failed ({type(exc).__name__}: {exc}). The server log has the details.")
    result.trace["settings"] = settings_summary(config)  # what produced this answer, for the trace and exports
    if result.error:
        st.error(escape_markdown(result.error))
    return Outcome(result=result)


def _failed(message: str) -> Outcome:
    st.error(escape_markdown(message))
    return Outcome(error=message)


def render_sources(sources: Sequence[Source], *, marks: dict[str, str] | None = None,
                   expanded: bool = False) -> None:
    """The numbered sources the answer was written from; ``marks`` adds a badge per chunk id."""
    with st.expander(f"Sources ({len(sources)})", expanded=expanded):
        for source in sources:
            st.markdown(source_line(source, marks))
            st.text(source.text)


def source_line(source: Source, marks: dict[str, str] | None = None) -> str:
    """``**[n]** file · pages · score`` plus a badge from ``marks`` (by chunk id), as safe Markdown."""
    score = f" · score {source.score:.3f}" if source.score is not None else ""
    badge = f" :orange-badge[{marks[source.chunk_id]}]" if marks and source.chunk_id in marks else ""
    return (f"**[{source.n}]** {label(source.file_name)} · "
            f"{pages_label(source.page_start, source.page_end)}{score}{badge}")


def render_result(result: AnswerResult, store: Any, *, key: str, marks: dict[str, str] | None = None,
                  ask_anyway: bool = False) -> None:
    """Everything under an answer: flags, reflection, sources, the citation viewer and the trace.

    With ``ask_anyway`` a refusal offers to ask again: a gate refusal without the gate ("Ask anyway",
    ``ASK_ANYWAY_KEY``), and a question read as asking for one fact as one asking for an explanation
    ("Answer as an explanation", ``ASK_AS_BROAD_KEY``).
    """
    if result.error:
        st.error(escape_markdown(result.error))
    if result.fallback_reason:
        st.warning(escape_markdown(result.fallback_reason))
    render_verification(result)
    render_groundedness(result)
    render_reflection(result)
    if result.sources:
        render_sources(result.sources, marks=marks)
    if result.citations:
        render_citation_viewer(result.citations, store, key=key)
    elif result.used_knowledge_base and result.abstained and not result.error:
        render_refusal(result, key=key, ask_anyway=ask_anyway)
    render_trace(result)


ASK_ANYWAY_KEY = "ask_anyway_request"  # session key: the question to answer again without the gate
ASK_AS_BROAD_KEY = "ask_as_broad_request"  # session key: the question to answer again as a broad one


def render_refusal(result: AnswerResult, *, key: str, ask_anyway: bool) -> None:
    """Why the answer is "not found": the gate's signals or the claims that failed verification; with
    ``ask_anyway``, the buttons that ask again (``render_result``)."""
    gate = result.trace.get("answerability") or {}
    gate_refused = gate.get("answerable") is False
    failed = [c for c in result.verification if not c.get("supported")]
    if gate_refused:
        st.caption(label(f"Not answered: the answerability check judged that the sources do not hold the "
                         f"answer — {gate.get('reason', '')}."))
    elif failed:
        lines = _claim_lines(failed)
        why = ("the model was unsure of its answer" if all(c.get("check") == "confidence" for c in failed)
               else "the draft's claims are not stated by the sources they cite")
        st.caption(f"Not answered: {why}:\n\n{lines}")
    elif result.trace.get("refused_by_model") and result.draft:
        # the model's words may echo a document: shown as escaped text, never as markup
        st.caption(f"Not answered: the model replied that its sources do not hold the answer "
                   f"(its words: “{label(result.draft[:300])}”).")
    else:
        st.caption("The answer was not found in the documents searched.")
    if not ask_anyway:
        return
    if gate_refused:
        st.button("Ask anyway", key=f"{key}_ask_anyway", icon=":material/replay:", on_click=_request_again,
                  args=(ASK_ANYWAY_KEY, result.question), help="Answer without the answerability check; each "
                                                                "claim is still checked against its source.")
    if (result.trace.get("question_kind") or {}).get("broad") is False:
        # which questions ask for an account is read from their wording, which misses many (docs/answering.md)
        st.button("Answer as an explanation", key=f"{key}_as_broad", icon=":material/subject:",
                  on_click=_request_again, args=(ASK_AS_BROAD_KEY, result.question),
                  help="This question was read as asking for one fact (a name, number or date), which its sources "
                       "must state in one sentence. Answer it as asking for an explanation, summary or comparison "
                       "instead: whole passages and the document's opening; each claim is still checked against its "
                       "source.")


def render_verification(result: AnswerResult) -> None:
    """Claims re-cited to the source that states them, and claims removed because their cited source does not."""
    if result.abstained:
        return
    recited = [c for c in result.verification if c.get("supported") and c.get("check") == "recited"]
    if recited:
        lines = _claim_lines(recited)
        st.caption(f":material/swap_horiz: Re-cited {len(recited)} claim(s) to the source that states them:\n\n{lines}")
    failed = [c for c in result.verification if not c.get("supported")]
    if not failed:
        return
    lines = _claim_lines(failed)
    st.warning(f"**Removed {len(failed)} claim(s) that the cited sources do not state:**\n\n{lines}",
               icon=":material/rule:")


def _claim_lines(checks: list[dict]) -> str:
    """One Markdown list line per claim check: its sentence and the reason, both as escaped text."""
    return "\n".join(f"- {label(c['sentence'])} — {label(c['reason'])}" for c in checks)


def _request_again(session_key: str, question: str) -> None:
    st.session_state[session_key] = question


def render_groundedness(result: AnswerResult) -> None:
    checks = result.groundedness
    if not checks:
        return
    unsupported = [g for g in checks if not g["supported"]]
    if not unsupported:
        st.caption(f":material/verified: All {len(checks)} cited sentences are supported by their sources.")
        return
    lines = "\n".join(f"- {label(g['sentence'])} ({label(g['reason'] or 'unsupported')})"
                      for g in unsupported)
    st.warning(f"**{len(unsupported)} of {len(checks)} cited sentences are not supported by the cited "
               f"source:**\n\n{lines}", icon=":material/report:")


def render_reflection(result: AnswerResult) -> None:
    rounds = result.reflection
    if not rounds:
        return
    kept = next((r for r in rounds if r.get("selected")), rounds[-1])
    score = "unscored" if kept.get("score") is None else f"{kept['score']:g}/10"
    st.caption(f":material/rate_review: Context graded {score} by reflection (round {kept['round']} of "
               f"{len(rounds)} kept)")
    with st.expander("Reflection rounds"):
        import pandas as pd

        st.dataframe(pd.DataFrame([{
            "round": r["round"], "score": r.get("score"), "kept": bool(r.get("selected")),
            "widening": r.get("expansion", 0), "search query": r.get("query", ""), "reason": r.get("reason", ""),
        } for r in rounds]), hide_index=True, width="stretch")


def render_citation_viewer(citations: Sequence[Citation], store: Any, *, key: str) -> None:
    """Choose a citation; see its passage highlighted on the PDF page (or quoted, for other formats)."""
    labels = [f"[{c.n}] {plain(c.file_name)} · p. {c.page}" + (" · matched without a marker" if c.inferred else "")
              for c in citations]
    index = st.selectbox("Citation", range(len(citations)), format_func=labels.__getitem__, key=f"{key}_citation")
    citation = citations[index]
    quote, page = st.columns([2, 3])
    with quote:
        if citation.sentence:
            st.caption("Cited for:")
            st.text(citation.sentence)
        st.caption("Passage:")
        st.text(citation.text)
    with page:
        show_citation_page(citation, store)


def show_citation_page(citation: Citation, store: Any) -> None:
    try:
        record = store.document(citation.doc_id)
        path = store.stored_file(citation.doc_id)
    except KeyError:
        st.info("This document has been deleted since the answer was given.")
        return
    if record.file_type != "pdf" or not path.exists():
        return  # other formats: the quoted passage above is the view
    pages = citation.pages or [(citation.page, citation.highlights)]
    for page, rects in pages:
        try:
            image = page_image(str(path), int(page), tuple(tuple(r) for r in rects), path.stat().st_mtime)
        except (OSError, ValueError, RuntimeError) as exc:
            st.warning(f"Page {page} could not be rendered: {label(str(exc))}")
            continue
        # st.image renders its caption as Markdown
        st.image(image, caption=label(f"{citation.file_name} · page {page}"), width="stretch", output_format="PNG")


def render_stats(result: AnswerResult) -> None:
    st.caption(label(timing_summary(result)))

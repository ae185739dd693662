"""Chat: streamed, cited answers over your documents, with the highlighted passage on its page.

Answers are model output and may echo a hostile document: they are shown through ``ui.safe_text``.
Only the last ``SHOWN_MESSAGES`` messages are drawn (each brings sources, a citation viewer with a
page image and a trace), so a long session stays as fast as a short one; the exports, built only when
a button is clicked, keep the whole conversation.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: a page can run before app.py, see ui/preload.py)
import streamlit as st

from rag.index.registry import SEARCHABLE
from rag.answer.types import ChatTurn
from rag.answer.transcript import to_json, to_markdown
from ui.answer_view import ASK_ANYWAY_KEY, ASK_AS_BROAD_KEY, render_result, stream_answer
from ui.navigation import set_up_navigation
from ui.resources import get_store
from ui.safe_text import escape_markdown, plain, show_answer
from ui.state import current_config

set_up_navigation()  # before anything is drawn: see ui/navigation.py

MESSAGES_KEY = "chat_messages"
SHOWN_MESSAGES = 20  # ten questions and their answers; even, so a question is never cut from its answer
HISTORY_MESSAGES = 12  # what the answer engine is given (it condenses over fewer than this)

config = current_config()
store = get_store(config)
messages: list[dict] = st.session_state.setdefault(MESSAGES_KEY, [])
ready = {r.doc_id: r.file_name for r in store.documents() if r.status in SEARCHABLE}  # keyword-only ones too

with st.sidebar:
    use_kb = st.toggle("Use knowledge base", value=True, key="chat_use_kb",
                       help="Off: the model answers from its own knowledge, without sources.")
    chosen = st.multiselect("Only search these documents", list(ready), format_func=lambda d: plain(ready[d]),
                            key="chat_doc_filter", disabled=not use_kb, placeholder="All documents",
                            help="Leave empty to search every indexed document.")
    transcript = list(messages)  # the exports run on click, on another thread: give them this run's history
    st.download_button("Export Markdown", lambda: to_markdown(transcript), file_name="citewise-chat.md",
                       mime="text/markdown", on_click="ignore", disabled=not messages, icon=":material/download:")
    st.download_button("Export JSON", lambda: to_json(transcript), file_name="citewise-chat.json",
                       mime="application/json", on_click="ignore", disabled=not messages,
                       icon=":material/data_object:")
    if st.button("Clear chat", disabled=not messages, icon=":material/delete_sweep:"):
        messages.clear()
        for key in [k for k in st.session_state if str(k).startswith("chat_msg_")]:
            del st.session_state[key]
        st.rerun()

st.title("Chat")
if use_kb and not ready:
    st.info("No documents are indexed yet. Add some on the Documents page — or turn off "
            "**Use knowledge base** to chat with the model alone.", icon=":material/info:")
    st.page_link("pages/documents.py", label="Go to Documents", icon=":material/description:")

hidden = max(0, len(messages) - SHOWN_MESSAGES)
if hidden:
    st.caption(f"{hidden} earlier messages not shown. The exports in the sidebar hold the whole conversation.")
for i, message in enumerate(messages[hidden:], start=hidden):
    with st.chat_message(message["role"]):
        if message["role"] == "user":
            st.markdown(escape_markdown(message["content"]))
            continue
        if message.get("error"):
            st.error(escape_markdown(message["error"]))
            continue
        show_answer(message["content"])
        render_result(message["result"], store, key=f"chat_msg_{i}", ask_anyway=True)

question = st.chat_input("Ask about your documents")
anyway = st.session_state.pop(ASK_ANYWAY_KEY, None)  # "Ask anyway" under a refusal: the same question, no gate
as_broad = st.session_state.pop(ASK_AS_BROAD_KEY, None)  # "Answer as an explanation": the same question, broad
if (anyway or as_broad) and not question:
    question = anyway or as_broad
if question:
    history = [ChatTurn(m["role"], m["content"]) for m in messages[-HISTORY_MESSAGES:]
               if m["content"] and not m.get("error")]
    messages.append({"role": "user", "content": question})
    with st.chat_message("user"):
        st.markdown(escape_markdown(question))
    with st.chat_message("assistant"):
        outcome = stream_answer(config, question, history=history, doc_ids=(chosen or None) if use_kb else None,
                                use_knowledge_base=use_kb, skip_gate=question == anyway,
                                broad=True if question == as_broad else None)
    if outcome.result is not None:
        messages.append({"role": "assistant", "content": outcome.result.answer, "result": outcome.result})
    else:
        messages.append({"role": "assistant", "content": "", "error": outcome.error})
    st.rerun()  # redraw from history: citation viewer, trace, and up-to-date export buttons

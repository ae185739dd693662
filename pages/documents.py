"""Documents: upload, watch ingest progress, inspect, re-index and delete.

File names and chunk text are hostile: labels go through ``ui.safe_text.label``, table cells and
options through ``plain``. The ingest worker is shared by every session, so this page lists and
clears only the jobs this browser session submitted.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: a page can run before app.py, see ui/preload.py)
import uuid

import pandas as pd
import streamlit as st

from rag.answer.render import render_page_png
from rag.ingest.parse import SUPPORTED_EXTENSIONS
from rag.ingest.queue import QueueFullError
from ui.reindex import reindex_documents
from ui.resources import get_ingest_queue, get_store
from ui.safe_text import escape_markdown, label, plain
from ui.state import current_config

OWNER_KEY = "documents_session"

config = current_config()
store = get_store(config)
jobs = get_ingest_queue(config)
owner: str = st.session_state.setdefault(OWNER_KEY, uuid.uuid4().hex)

st.title("Documents")

with st.form("upload", clear_on_submit=True):
    uploads = st.file_uploader("Add documents", type=[s.lstrip(".") for s in SUPPORTED_EXTENSIONS],
                               accept_multiple_files=True,
                               help="PDF, Word, Markdown, HTML or plain text. Each file is parsed, chunked, "
                                    "embedded and indexed in the background.")
    submitted = st.form_submit_button("Upload and index", type="primary")
if submitted and uploads:
    queued = 0
    for upload in uploads:
        try:
            jobs.submit(upload.getvalue(), upload.name, config, owner=owner)
            queued += 1
        except QueueFullError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/hourglass_top:")
    if queued:
        st.toast(f"Queued {queued} file(s) for indexing")


@st.fragment(run_every=1.0)
def ingest_progress() -> None:
    current = jobs.jobs(owner)
    if not current:
        return
    st.subheader("Indexing")
    for job in current:
        result = job.result
        name = label(job.file_name)
        if job.state != "done":
            st.progress(job.fraction, text=f"{name} — {job.stage or 'queued'}: {label(job.message)}")
        elif result and result.status == "completed":
            st.success(f"{name}: {result.pages} pages, {result.chunks} chunks ({result.language})",
                       icon=":material/check_circle:")
        elif result and result.status == "duplicate":
            st.info(f"{name}: {label(result.error)}", icon=":material/info:")
        else:
            st.error(f"{name}: {label(result.error if result else 'failed')}", icon=":material/error:")
    if not jobs.active(owner):
        if st.button("Clear finished"):
            jobs.forget_finished(owner)
            st.rerun()
        elif st.session_state.get("documents_seen_jobs") != len(current):
            st.session_state["documents_seen_jobs"] = len(current)
            st.rerun()  # refresh the table below once the batch has finished


ingest_progress()

records = store.documents()
st.subheader(f"Library ({sum(r.status == 'completed' for r in records)} ready)")
unsearched = store.unsearched_vectors()
if unsearched:
    stale_ids = set().union(*unsearched.values())
    stale = [r for r in records if r.doc_id in stale_ids]
    st.warning(f"{len(stale)} document(s) were embedded with {', '.join(sorted(unsearched))}, which the current "
               "settings no longer use (the default English model or an embedding setting changed). Vector search "
               "skips them and only keyword search finds them until they are re-indexed.",
               icon=":material/warning:")
    if st.button(f"Re-index {len(stale)} document(s)", type="primary"):
        reindex_documents(store, config, stale)
if not records:
    st.info("No documents yet. Upload a PDF above to start.")
    st.stop()

table = pd.DataFrame([{
    "name": plain(r.file_name), "pages": r.pages, "chunks": r.chunks, "language": r.language or "–",
    "status": r.status, "error": plain(r.error or ""), "id": r.doc_id,
} for r in records])
st.dataframe(table, hide_index=True, width="stretch")

names = {r.doc_id: f"{plain(r.file_name)} ({r.status})" for r in records}
# The key carries the statuses: Streamlit keeps a keyed widget's option labels, so a document that
# finished indexing would otherwise still read "(pending)" here.
inspect_key = "documents_inspect_" + str(hash(tuple(names.items())))
previous = st.session_state.get("documents_inspected")
doc_id = st.selectbox("Inspect a document", list(names), format_func=names.get, key=inspect_key,
                      index=list(names).index(previous) if previous in names else 0)
st.session_state["documents_inspected"] = doc_id
record = store.document(doc_id)

actions = st.columns([1, 1, 6])
if actions[0].button("Re-index", help="Parse, chunk and embed again with the current settings",
                     disabled=not record.stored_path):
    from rag.ingest.ingestor import Ingestor

    with st.status(f"Re-indexing {label(record.file_name)}…", expanded=False) as status:
        result = Ingestor(store, config).reindex(doc_id)
        status.update(label=label(f"{record.file_name}: {result.status} {result.error}"),
                      state="complete" if result.ok else "error")
if actions[1].button("Delete", type="secondary"):
    store.delete(doc_id)
    st.toast(f"Deleted {label(record.file_name)}")
    st.rerun()

if record.error:
    st.error(escape_markdown(record.error))
if record.summary:
    st.markdown("**Summary**")
    st.text(record.summary)
    st.caption(f"Keywords: {label(record.keywords)} · Topics: {label(record.topics)}")  # written by the LLM

if record.status == "completed":
    chunks = store.chunks(doc_id)
    left, right = st.columns([3, 2])
    with left:
        st.markdown(f"**{len(chunks)} chunks**")
        for chunk in chunks[:200]:
            pages = (f"p. {chunk.page_start}" if chunk.page_start == chunk.page_end
                     else f"pp. {chunk.page_start}–{chunk.page_end}")
            with st.expander(f"#{chunk.index} · {pages} · {label(chunk.heading_path or chunk.text[:60])}"):
                st.text(chunk.text)  # never markdown or HTML: document text is data
    with right:
        if record.file_type == "pdf":
            page_number = st.number_input("Page preview", min_value=1, max_value=max(record.pages, 1), value=1)
            try:
                st.image(render_page_png(store.stored_file(doc_id), int(page_number)), width="stretch")
            except (OSError, ValueError, RuntimeError) as exc:  # includes a page too large to draw
                st.warning(f"Page {int(page_number)} could not be previewed: {label(str(exc))}")

"""Documents: upload, watch ingest progress, inspect (metadata, OCR'd pages, tables, notes), re-index, delete.

A document is keyword-searchable as soon as it is parsed and chunked; its vectors follow in the
background. Progress shows each document's stage, n of N, rate and time left; the library shows both
searchable states, and a document whose embedding stopped can be resumed with one click.

File names, chunk text and everything the LLM wrote are hostile: labels go through
``ui.safe_text.label``, table cells and options through ``plain``, and text is shown with ``st.text``,
never as Markdown, so a summary or a file name cannot add links, images or layout. The ingest worker
is shared by every session, so this page lists and clears only the jobs this browser session submitted
(embedding in the background is shown for all).
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: a page can run before app.py, see ui/preload.py)
import uuid

import pandas as pd
import streamlit as st

from rag.answer.render import render_page_png
from rag.documents import parse_page_ranges
from rag.index.registry import SEARCHABLE
from rag.ingest.parse import SUPPORTED_EXTENSIONS
from rag.ingest.queue import QueueFullError
from ui.ingest_view import keyword_only_notice, library_rows, show_progress
from ui.navigation import set_up_navigation
from ui.reindex import reindex_documents
from ui.resources import get_ingest_queue, get_metadata_llm, get_store
from ui.safe_text import escape_markdown, label, plain
from ui.state import current_config

set_up_navigation()  # before anything is drawn: see ui/navigation.py

OWNER_KEY = "documents_session"

config = current_config()
store = get_store(config)
jobs = get_ingest_queue(config)
owner: str = st.session_state.setdefault(OWNER_KEY, uuid.uuid4().hex)


def metadata_llm():
    """The LLM for document metadata when it is enabled; if it cannot be loaded, say so and go on without."""
    if not config.metadata.enabled:
        return None
    try:
        return get_metadata_llm(config)
    except Exception as exc:  # noqa: BLE001 - the documents are still indexed, only without metadata
        st.warning(f"Document metadata is enabled but the LLM could not be loaded: {escape_markdown(str(exc))}",
                   icon=":material/warning:")
        return None


st.title("Documents")

with st.form("upload", clear_on_submit=True):
    uploads = st.file_uploader("Add documents", type=[s.lstrip(".") for s in SUPPORTED_EXTENSIONS],
                               accept_multiple_files=True,
                               help="PDF, Word, Markdown, HTML or plain text. Each file is parsed, chunked, "
                                    "embedded and indexed in the background.")
    submitted = st.form_submit_button("Upload and index", type="primary")
if submitted and uploads:
    llm = metadata_llm()
    queued = 0
    for upload in uploads:
        try:
            jobs.submit(upload.getvalue(), upload.name, config, owner=owner, metadata_llm=llm)
            queued += 1
        except QueueFullError as exc:
            st.error(escape_markdown(str(exc)), icon=":material/hourglass_top:")
    if queued:
        st.toast(f"Queued {queued} file(s) for indexing")


@st.fragment(run_every=1.0)
def ingest_progress() -> None:
    current = jobs.jobs(owner)
    mine = {job.result.doc_id for job in current if job.result is not None}
    others = [doc_id for doc_id in jobs.embedder.pending() if doc_id not in mine]  # resumed, or other sessions'
    if not current and not others:
        return
    st.subheader("Indexing")
    for job in current:
        result = job.result
        name = label(job.file_name)
        if job.state != "done":
            show_progress(job.view(), searchable=job.state == "embedding")
        elif result and result.status == "searchable":
            st.warning(f"{name}: keyword-searchable, but embedding stopped: {label(result.error)}",
                       icon=":material/warning:")
        elif result and result.status == "completed":
            st.success(f"{name}: {result.pages} pages, {result.chunks} chunks ({result.language})",
                       icon=":material/check_circle:")
        elif result and result.status == "duplicate":
            st.info(f"{name}: {label(result.error)}", icon=":material/info:")
        else:
            st.error(f"{name}: {label(result.error if result else 'failed')}", icon=":material/error:")
    for doc_id in others:
        progress = jobs.embedder.progress(doc_id)
        if progress is not None:
            show_progress(progress.view(), searchable=True)
    if not jobs.active(owner) and not others:
        if st.button("Clear finished"):
            jobs.forget_finished(owner)
            st.rerun()
        elif st.session_state.get("documents_seen_jobs") != len(current):
            st.session_state["documents_seen_jobs"] = len(current)
            st.rerun()  # refresh the table below once the batch has finished


ingest_progress()

records = store.documents()
partial = {k.doc_id: k for k in store.keyword_only()}
embedding = sum(r.status == "embedding" for r in records)
st.subheader(f"Library ({sum(r.status == 'completed' for r in records)} ready"
             + (f", {embedding} keyword-searchable while embedding" if embedding else "") + ")")
# not being embedded here, and no live process at work on it (another app or CLI, or its own ingest)
stalled = [doc_id for doc_id in partial if not jobs.embedder.active(doc_id) and store.busy(doc_id) is None]
if stalled:
    st.warning(f"{len(stalled)} document(s) are keyword-searchable but their embedding is not running (it stopped "
               "with an error, or the app was stopped while embedding).", icon=":material/warning:")
    if st.button(f"Resume embedding {len(stalled)} document(s)", type="primary"):
        for doc_id in stalled:
            jobs.embedder.submit(doc_id)
        st.rerun()
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

table = pd.DataFrame(library_rows(records, partial))
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
        result = Ingestor(store, config, metadata_llm=metadata_llm(), background=jobs.embedder).reindex(doc_id)
        done = ("re-indexed, keyword-searchable now; its vectors follow in the background"
                if result.status == "searchable" and result.ok else f"{result.status} {result.error}")
        status.update(label=label(f"{record.file_name}: {done}"), state="complete" if result.ok else "error")
if actions[1].button("Delete", type="secondary"):
    try:
        store.delete(doc_id)
    except RuntimeError as exc:  # another process is writing, or this document is being indexed
        st.error(f"Not deleted: {escape_markdown(str(exc))}")
    else:
        st.toast(f"Deleted {label(record.file_name)}")
        st.rerun()

if record.error:
    st.error(escape_markdown(record.error))
ocr_pages = parse_page_ranges(record.ocr_pages)
if ocr_pages:
    st.info(f"Read by OCR (Tesseract), no text layer: page(s) {label(record.ocr_pages)}. Their text may hold "
            "recognition errors.", icon=":material/document_scanner:")
if record.notes:
    with st.expander(f"{len(record.notes.splitlines())} note(s): what some pages lost, and why", expanded=True):
        st.text(record.notes)
if record.summary or record.keywords:
    with st.container(border=True):
        st.caption("Summary, keywords, topics and key phrases written by the LLM at ingest")
        st.text(record.summary)
        st.dataframe(pd.DataFrame([{"keywords": plain(record.keywords), "topics": plain(record.topics),
                                    "key phrases": plain(record.key_phrases)}]), hide_index=True, width="stretch")

if record.status in ("embedding", "preliminary"):
    keyword_only_notice(record, partial.get(doc_id))
if record.status in SEARCHABLE:
    chunks = store.chunks(doc_id)
    left, right = st.columns([3, 2])
    with left:
        tables = sum(1 for chunk in chunks if chunk.kind == "table")
        st.markdown(f"**{len(chunks)} chunks**" + (f" ({tables} from tables)" if tables else ""))
        for chunk in chunks[:200]:
            pages = (f"p. {chunk.page_start}" if chunk.page_start == chunk.page_end
                     else f"pp. {chunk.page_start}–{chunk.page_end}")
            kind = " · table" if chunk.kind == "table" else ""
            scanned = " · OCR" if chunk.page_start in ocr_pages else ""
            with st.expander(f"#{chunk.index} · {pages}{kind}{scanned} · "
                             f"{label(chunk.heading_path or chunk.text[:60])}"):
                st.text(chunk.text)  # never markdown or HTML: document text is data
    with right:
        if record.file_type == "pdf":
            page_number = st.number_input("Page preview", min_value=1, max_value=max(record.pages, 1), value=1)
            if int(page_number) in ocr_pages:
                st.caption(f"Page {int(page_number)} has no text layer; its text was read by OCR.")
            try:
                st.image(render_page_png(store.stored_file(doc_id), int(page_number)), width="stretch")
            except (OSError, ValueError, RuntimeError) as exc:  # includes a page too large to draw
                st.warning(f"Page {int(page_number)} could not be previewed: {label(str(exc))}")

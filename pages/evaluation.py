"""Evaluation: retrieval quality and speed of the current settings next to a preset, on a question set."""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: a page can run before app.py, see ui/preload.py)
import logging
import tempfile
from pathlib import Path

import streamlit as st

from rag.evaluation import run as eval_run
from rag.evaluation import uploads
from rag.config import ConfigError
from rag.evaluation.datasets import NAMED_DATASETS
from rag.presets import PresetError
from ui.eval_view import RESULTS_KEY, phase_progress, show_results
from ui.navigation import set_up_navigation
from ui.resources import base_config, get_store
from ui.safe_text import escape_markdown, plain
from ui.safe_text import label as safe_label  # "label" names a loop variable below
from ui.state import current_config, preset_store

set_up_navigation()  # before anything is drawn: see ui/navigation.py

logger = logging.getLogger(__name__)
CURRENT_LABEL = "Current settings"
NO_PRESET = "(none)"

config = current_config()
presets = preset_store()

st.title("Evaluation")
st.caption("How well retrieval finds the right passages (recall, nDCG, MRR) and how fast, for your current "
           "settings next to a preset. Only retrieval runs; no answers are generated.")

# -- question set ----------------------------------------------------------------------------------
bundled = eval_run.bundled_datasets()
available = [name for name, path in bundled.items() if path is not None]
source = st.radio("Question set", ["Bundled dataset", "Upload a file"], horizontal=True, key="eval_source",
                  index=0 if available else 1)
dataset_name = upload = None
if source == "Bundled dataset":
    absent = [f"{name} ({NAMED_DATASETS[name]})" for name, path in bundled.items() if path is None]
    if absent:
        st.info(f"Not found under the evaluation data folder: {', '.join(absent)}. "
                "Set RAG_EVAL_DATA to the folder holding them, or upload a question set.")
    if available:
        dataset_name = st.selectbox("Bundled dataset", available, key="eval_dataset")
        st.caption("The first run on a bundled set embeds its whole corpus (thousands of passages: minutes on a "
                   "CPU) into an evaluation index cached in "
                   f"{eval_run.EVAL_HOME / 'eval'}; later runs reuse it and take seconds per 100 questions.")
    else:
        st.warning("No bundled dataset is available here: upload a question set instead.")
else:
    upload = st.file_uploader("Question set file", type=["csv", "json", "zip"], key="eval_upload",
                              help="CSV with question, expected_document, expected_page columns (scored against "
                                   "your own documents); SQuAD-style JSON; or a zipped BEIR folder "
                                   "(corpus.jsonl, queries.jsonl, qrels/test.tsv).")
    st.caption("A CSV is scored against the documents in your library: a hit is a retrieved passage of the "
               "expected document that covers the expected page.")

# -- what to compare -------------------------------------------------------------------------------
left, right = st.columns(2)
limit = left.slider("Query limit", min_value=5, max_value=1000, value=100, step=5, key="eval_limit",
                    help="A reproducible random sample of this many questions (all of them when the set is smaller).")
names = [NO_PRESET] + presets.names()
other_name = right.selectbox("Compare with preset", names, index=names.index("Default") if "Default" in names else 0,
                             key="eval_other", format_func=plain)
other_config = None
if other_name != NO_PRESET:
    try:
        other_config = presets.load(other_name, base_config())
    except PresetError as exc:
        st.error(f"{escape_markdown(str(exc))}. Hint: pick another preset, or delete this one on the Settings page.")
needs_llm = any(c.query.rewrite or c.query.hyde for c in (config, other_config) if c is not None)
load_llm = needs_llm and st.toggle(
    "Load the LLM for query rewrite / HyDE", value=False, key="eval_llm",
    help="Slow: every question calls the LLM, so such runs are capped at 50 questions. "
         "Off: those stages fall back to the raw question, and the results say so.")

run = st.button("Run evaluation", type="primary",
                disabled=(source == "Bundled dataset" and not dataset_name) or (other_name != NO_PRESET and other_config is None))


def evaluate() -> dict:
    """Load the set, open (or build) its index, run both settings; raises with a user-facing message."""
    store = get_store(config)
    bar = st.progress(0.0, text="Loading the question set…")
    if upload is not None:
        with tempfile.TemporaryDirectory() as workdir:
            dataset = uploads.load_upload(upload.name, upload.getvalue(), Path(workdir))
    elif dataset_name:
        from rag.evaluation.datasets import load_dataset

        dataset = load_dataset(dataset_name)
    else:
        raise ValueError("choose a bundled dataset or upload a question set first")

    settings = [(CURRENT_LABEL, config)]
    notes: list[str] = []
    if other_config is not None:
        compared = eval_run.index_settings(other_config, config)
        if compared != other_config:
            notes.append(f"Preset “{other_name}” changes chunking or embedding; both runs use the current index, "
                         "so only its retrieval, rerank, MMR, query and generation settings are compared.")
        settings.append((f"Preset: {plain(other_name)}", compared))

    if eval_run.is_csv_set(dataset):
        if not store.completed_ids():
            raise ValueError("your library is empty; a CSV question set is scored against your own documents, "
                             "so upload them on the Documents page first")
        target, close = store, False
        bar.progress(0.05, text=f"{len(dataset.queries)} questions against your {len(store.completed_ids())} "
                                "document(s)")
    else:
        bar.progress(0.0, text=f"Opening the evaluation index for {safe_label(dataset.name)} "
                               f"({len(dataset.corpus):,} passages; built once, cached in {eval_run.EVAL_HOME / 'eval'})…")
        target = eval_run.corpus_store(dataset, config, store.router, progress=phase_progress(bar, 0.0, 0.4))
        close = True
    try:
        runs = []
        start = 0.4 if close else 0.05
        share = (1.0 - start) / len(settings)
        for number, (label, settings_config) in enumerate(settings):
            llm, reranker = _models(settings_config)
            runs.append(eval_run.run_settings(
                dataset, target, settings_config, label=label, limit=limit, llm=llm, reranker=reranker,
                progress=phase_progress(bar, start + number * share, start + (number + 1) * share)))
    finally:
        if close:
            target.close()
    bar.progress(1.0, text="Done")
    return {"dataset": dataset.name, "runs": runs, "notes": notes}


def _models(settings_config):
    """The LLM (only when asked for) and the reranker (only when on), the same cached ones Chat uses."""
    from ui.resources import get_engine, get_reranker

    wants_llm = load_llm and (settings_config.query.rewrite or settings_config.query.hyde)
    llm = get_engine(settings_config).llm if wants_llm else None
    return llm, get_reranker(settings_config)


if run:
    with st.status("Evaluating…", expanded=True) as status:
        try:
            st.session_state[RESULTS_KEY] = evaluate()
            status.update(label="Evaluation finished", state="complete", expanded=False)
        except (OSError, ValueError, ConfigError, PresetError) as exc:
            status.update(label="Evaluation failed", state="error")
            st.error(f"{escape_markdown(str(exc))}. Hint: check the file format (see the help on the upload box) "
                     "or pick another set.")
        except Exception as exc:  # noqa: BLE001 - the page shows why, never a traceback
            logger.exception("evaluation failed")
            status.update(label="Evaluation failed", state="error")
            st.error(f"Evaluation failed: {type(exc).__name__}: {escape_markdown(str(exc))}. Hint: see the server log "
                     "for details.")

if RESULTS_KEY in st.session_state:
    show_results(st.session_state[RESULTS_KEY])

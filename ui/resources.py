"""The only ``st.cache_resource`` factories: the store (with its embedders), the LLM and the answer
engine, per config.

The config is a frozen dataclass, so its sections are the cache keys: a changed storage or embedding
setting builds a new store; a retrieval-only change does not, because only those sections are passed.
The engine is keyed by what it is built from (store, LLM, sampling settings, reranker), never by the
retrieval knobs, which the pipeline takes per call.
"""

from __future__ import annotations

import streamlit as st

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from rag.config import EmbeddingConfig, GenerationConfig, LLMConfig, RagConfig, RerankConfig, StorageConfig, load_config
from rag.index.store import DocumentStore


@st.cache_resource(show_spinner="Loading the document store…")
def _store(storage: StorageConfig, embedding: EmbeddingConfig) -> DocumentStore:
    from rag.config import RagConfig as _RagConfig
    from rag.runtime import build_store

    return build_store(_RagConfig(storage=storage, embedding=embedding))


def get_store(config: RagConfig) -> DocumentStore:
    return _store(config.storage, config.embedding)


@st.cache_resource
def base_config() -> RagConfig:
    """Defaults < YAML ($RAG_CONFIG) < RAG_* environment, read once per server process."""
    return load_config()


@st.cache_resource
def _ingest_queue(storage: StorageConfig, embedding: EmbeddingConfig):
    from rag.ingest.queue import IngestQueue

    return IngestQueue(_store(storage, embedding))


def get_ingest_queue(config: RagConfig):
    """One background ingest worker per store, shared by every session of this server."""
    return _ingest_queue(config.storage, config.embedding)


@st.cache_resource(show_spinner="Loading the language model…")
def _llm_handle(llm: LLMConfig) -> Any:
    """One loaded model per ``llm`` section, shared by every sampling setting (see ``get_engine``)."""
    from rag.runtime import build_llm_handle, warm_up_in_background

    handle = build_llm_handle(RagConfig(llm=llm))
    warm_up_in_background(handle.llm)
    return handle


def get_metadata_llm(config: RagConfig) -> Any:
    """The LLM that writes document metadata at ingest (the answering model, loaded once), or None when
    ``metadata.enabled`` is off."""
    from rag.runtime import build_metadata_llm

    return build_metadata_llm(config, handle=_llm_handle(config.llm)) if config.metadata.enabled else None


@st.cache_resource(show_spinner="Loading the reranker…")
def _reranker(model_path: str) -> Any:
    from rag.runtime import build_reranker

    return build_reranker(RagConfig(rerank=RerankConfig(enabled=True, model_path=model_path)))


@st.cache_resource(show_spinner=False, max_entries=16)
def _engine(storage: StorageConfig, embedding: EmbeddingConfig, llm: LLMConfig, temperature: float,
            max_answer_tokens: int, rerank_path: str) -> Any:
    from rag.cli.answer import build_answer_engine
    from rag.runtime import with_generation

    generation = GenerationConfig(temperature=temperature, max_answer_tokens=max_answer_tokens)
    config = RagConfig(storage=storage, embedding=embedding, llm=llm, generation=generation,
                       rerank=RerankConfig(enabled=bool(rerank_path), model_path=rerank_path))
    handle = _llm_handle(llm)
    handle = replace(handle, llm=with_generation(handle.llm, generation))
    return build_answer_engine(config, _store(storage, embedding), handle=handle,
                               reranker=_reranker(rerank_path) if rerank_path else None)


def get_engine(config: RagConfig) -> Any:
    """The ``AnswerEngine`` for ``config``; call ``engine.stream(question, config, ...)`` with the same config.

    Raises:
        rag.models.llms.LLMUnavailableError: No LLM could be loaded (the message says what to check).
    """
    rerank_path = config.rerank.model_path if config.rerank.enabled else ""
    return _engine(config.storage, config.embedding, config.llm, config.generation.temperature,
                   config.generation.max_answer_tokens, rerank_path)


@st.cache_data(show_spinner=False, max_entries=64)
def page_image(pdf_path: str, page: int, rects: Sequence[Sequence[float]], mtime: float) -> bytes:
    """PNG of a PDF page with ``rects`` highlighted (``mtime`` keys the cache to the file's version)."""
    from rag.answer.highlight import render_highlighted_page

    return render_highlighted_page(Path(pdf_path), page, [list(r) for r in rects])


def get_reranker(config: RagConfig) -> Any:
    """The cross-encoder when ``rerank.enabled`` (the engine's cached one), else None; loads no LLM."""
    return _reranker(config.rerank.model_path) if config.rerank.enabled else None

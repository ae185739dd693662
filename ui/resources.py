"""The only ``st.cache_resource`` factories: the store (with its embedders), the models and the query
engine.

The config is frozen and hashable, so it and its sections are the cache keys. Models are keyed by only
what changes them: an embedding model by its spec (stores of other embedding settings share it), the
store by the storage and embedding sections but the batch size (a speed setting its router takes in
place), the embedded LLM by its model file, context size and threads (one loaded copy however the other LLM
settings change), the reranker by its folder. The query engine is assembled once per whole config around
those shared models: a new setting means a new (cheap) engine, never a second copy of a model.
"""

from __future__ import annotations

import streamlit as st

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from rag.config import (
    DEFAULT_HOME,
    EmbeddingConfig,
    GenerationConfig,
    LLMConfig,
    RagConfig,
    RerankConfig,
    StorageConfig,
    load_config,
)
from rag.index.store import DocumentStore


@st.cache_resource(show_spinner=False)  # often first called by the background embedder's thread, which has no page
def _embedding_model(spec: str) -> Any:
    """One loaded copy of each embedding model, shared by every store that names it."""
    from rag.runtime import load_embedder

    return load_embedder(spec)


@st.cache_resource(show_spinner="Loading the document store…")
def _store(storage: StorageConfig, embedding: EmbeddingConfig) -> DocumentStore:
    from rag.config import RagConfig as _RagConfig
    from rag.runtime import build_router, build_store

    config = _RagConfig(storage=storage, embedding=embedding)
    return build_store(config, build_router(config, load=_embedding_model))


def get_store(config: RagConfig) -> DocumentStore:
    store = _store(config.storage, _store_key(config.embedding))
    store.router.set_batch_size(config.embedding.batch_size)
    return store


def _store_key(embedding: EmbeddingConfig) -> EmbeddingConfig:
    """The embedding settings a store is kept by: all but the batch size, a speed setting that the store's
    router takes in place. A second store of one library would keep a second keyword index in memory and run
    a second ingest queue and background embedder on the same folder."""
    return replace(embedding, batch_size=EmbeddingConfig().batch_size)


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
    get_store(config)  # the store's batch size follows the settings
    return _ingest_queue(config.storage, _store_key(config.embedding))


@st.cache_resource(show_spinner="Loading the language model…", max_entries=2)
def _embedded_llm(model: str, n_ctx: int, n_threads: int) -> Any:
    """The bundled GGUF model, loaded once per (file, context size, threads) and warmed up."""
    from rag.models.llms import load_embedded_llm
    from rag.runtime import warm_up_in_background

    llm = load_embedded_llm(LLMConfig(embedded_model=model, n_ctx=n_ctx, n_threads=n_threads), GenerationConfig(),
                            DEFAULT_HOME)
    warm_up_in_background(llm)
    return llm


def _embedded_loader(llm: LLMConfig):
    return lambda: _embedded_llm(llm.embedded_model, llm.n_ctx, llm.n_threads)


@st.cache_resource(show_spinner="Connecting to the language model…", max_entries=4)
def _llm_handle(llm: LLMConfig) -> Any:
    """The configured LLM (a server, checked once, or the shared embedded model)."""
    from rag.runtime import build_llm_handle

    return build_llm_handle(RagConfig(llm=llm), load_embedded=_embedded_loader(llm))


def get_metadata_llm(config: RagConfig) -> Any:
    """The LLM that writes document metadata at ingest (the answering model, loaded once), or None when
    ``metadata.enabled`` is off."""
    from rag.runtime import build_metadata_llm

    return build_metadata_llm(config, handle=_llm_handle(config.llm)) if config.metadata.enabled else None


@st.cache_resource(show_spinner="Loading the reranker…", max_entries=2)
def _reranker(model_path: str) -> Any:
    from rag.runtime import build_reranker

    return build_reranker(RagConfig(rerank=RerankConfig(enabled=True, model_path=model_path)))


@st.cache_resource(show_spinner=False, max_entries=8)
def _engine(config: RagConfig) -> Any:
    from rag.runtime import build_engine, build_llm_runner, with_generation

    handle = _llm_handle(config.llm)
    handle = replace(handle, llm=with_generation(handle.llm, config.generation))
    runner = build_llm_runner(config, handle, load_embedded=_embedded_loader(config.llm))
    return build_engine(config, store=get_store(config), llm=runner, reranker=get_reranker(config))


def get_engine(config: RagConfig) -> Any:
    """The ``CitewiseQueryEngine`` assembled for ``config`` (cached per config).

    Raises:
        rag.models.llms.LLMUnavailableError: No LLM could be loaded (the message says what to check).
    """
    return _engine(config)


@st.cache_data(show_spinner=False, max_entries=64)
def page_image(pdf_path: str, page: int, rects: Sequence[Sequence[float]], mtime: float) -> bytes:
    """PNG of a PDF page with ``rects`` highlighted (``mtime`` keys the cache to the file's version)."""
    from rag.answer.highlight import render_highlighted_page

    return render_highlighted_page(Path(pdf_path), page, [list(r) for r in rects])


def get_reranker(config: RagConfig) -> Any:
    """The cross-encoder when ``rerank.enabled`` (the engine's cached one), else None; loads no LLM."""
    return _reranker(config.rerank.model_path) if config.rerank.enabled else None

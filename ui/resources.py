"""The only ``st.cache_resource`` factories: the store (with its embedders) per config.

The config is a frozen dataclass, so it is the cache key: a changed storage or embedding setting
builds a new store; a retrieval-only change does not, because only those sections are passed.
"""

from __future__ import annotations

import streamlit as st

from rag.config import EmbeddingConfig, RagConfig, StorageConfig, load_config
from rag.store import DocumentStore


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
    from rag.ingest_queue import IngestQueue

    return IngestQueue(_store(storage, embedding))


def get_ingest_queue(config: RagConfig):
    """One background ingest worker per store, shared by every session of this server."""
    return _ingest_queue(config.storage, config.embedding)

"""Assembly of the real components from one config: the only place models are constructed.

The CLI and the Streamlit app both build through here (the app wraps these in ``st.cache_resource``).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag.config import RagConfig  # noqa: E402
from rag.embedding_router import EmbedderRouter  # noqa: E402
from rag.store import DocumentStore  # noqa: E402


def build_router(config: RagConfig) -> EmbedderRouter:
    from rag.embedders import build_embedder

    batch_size = config.embedding.batch_size
    return EmbedderRouter(config.embedding, lambda spec: build_embedder(spec, batch_size=batch_size))


def build_store(config: RagConfig, router: EmbedderRouter | None = None) -> DocumentStore:
    return DocumentStore(config, router or build_router(config))

"""Assembly of the real components from one config: the only place models are constructed.

The CLI and the Streamlit app both build through here (the app wraps these in ``st.cache_resource``).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import logging  # noqa: E402
import threading  # noqa: E402
from typing import Any  # noqa: E402

from rag.config import DEFAULT_HOME, GenerationConfig, RagConfig  # noqa: E402
from rag.models.embedding_router import EmbedderRouter  # noqa: E402
from rag.index.store import DocumentStore  # noqa: E402

logger = logging.getLogger(__name__)


def build_router(config: RagConfig) -> EmbedderRouter:
    from rag.models.embedders import build_embedder

    batch_size = config.embedding.batch_size
    return EmbedderRouter(config.embedding, lambda spec: build_embedder(spec, batch_size=batch_size))


def build_store(config: RagConfig, router: EmbedderRouter | None = None) -> DocumentStore:
    return DocumentStore(config, router or build_router(config))


def build_llm_handle(config: RagConfig):
    """The configured LLM (embedded GGUF or OpenAI-compatible server, with fallback recorded)."""
    from rag.models.llms import build_llm

    return build_llm(config.llm, config.generation, DEFAULT_HOME)


def build_metadata_llm(config: RagConfig, handle: Any = None) -> Any:
    """The LLM that writes document metadata at ingest when ``metadata.enabled``, else None.

    Args:
        config: Decides whether metadata is written, and which LLM (``config.llm``) writes it.
        handle: An ``LLMHandle`` already loaded for ``config.llm`` (the app shares its answering model);
            built here when not given.
    """
    if not config.metadata.enabled:
        return None
    return (handle or build_llm_handle(config)).llm


def warm_up_in_background(llm: Any) -> threading.Thread | None:
    """Put the answer prompt's fixed system part into the embedded model's KV cache on a daemon thread
    (about 4 s for the 1.5B model here), so the first question is as fast as the later ones. A question
    asked meanwhile waits on the model's lock, which costs it nothing extra. Servers need no warm-up."""
    warm_up = getattr(llm, "warm_up", None)
    if not callable(warm_up):
        return None
    from rag.prompts import ANSWER_SYSTEM_PROMPT

    def run() -> None:
        try:
            logger.info("warmed up the answer prompt's prefix in %.1f s", warm_up(ANSWER_SYSTEM_PROMPT))
        except Exception as exc:  # noqa: BLE001 - a failed warm-up only means a slower first answer
            logger.warning("warm-up failed (%s); the first answer evaluates the whole prompt", exc)

    thread = threading.Thread(target=run, name="llm-warm-up", daemon=True)
    thread.start()
    return thread


def build_reranker(config: RagConfig):
    """A cross-encoder from ``rerank.model_path``, or None when rerank is off."""
    if not config.rerank.enabled:
        return None
    from rag.models.embedders import build_cross_encoder

    return build_cross_encoder(config.rerank.model_path)


def build_pipeline(config: RagConfig, store: DocumentStore, *, with_llm: bool = False):
    """A retrieval pipeline over ``store``; the LLM is loaded only when query enhancement needs it."""
    from rag.retrieval.pipeline import RetrievalPipeline

    needs_llm = with_llm or config.query.rewrite or config.query.hyde
    llm = build_llm_handle(config).llm if needs_llm else None
    return RetrievalPipeline(store, llm=llm, reranker=build_reranker(config))


def with_generation(llm: Any, generation: GenerationConfig) -> Any:
    """``llm`` answering with ``generation``'s temperature and length, sharing the loaded weights.

    The LLMs take their sampling settings at construction, so a Settings change would otherwise need a
    second copy of the model in memory. A pydantic copy shares the private llama.cpp handle and its lock;
    LLMs without these fields (test fakes) are returned as they are.
    """
    fields = getattr(type(llm), "model_fields", {})
    update = {name: value for name, value in (("temperature", generation.temperature),
                                              ("max_tokens", generation.max_answer_tokens))
              if name in fields and getattr(llm, name) != value}
    return llm.model_copy(update=update) if update else llm

"""Assembly of the real components from one config: the only place models are constructed.

The CLI, the evaluation and the Streamlit app all build through here (the app wraps these in
``st.cache_resource``, passing in the models it has cached so that no second copy is loaded).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import logging  # noqa: E402
import threading  # noqa: E402
from typing import TYPE_CHECKING, Any, Callable  # noqa: E402

from rag.answer.llm_runner import LLMRunner  # noqa: E402
from rag.config import DEFAULT_HOME, GenerationConfig, RagConfig  # noqa: E402
from rag.index.store import DocumentStore  # noqa: E402
from rag.models.embedding_router import EmbedderRouter  # noqa: E402
from rag.models.llms import LLMHandle  # noqa: E402

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from rag.answer.engine import CitewiseQueryEngine

logger = logging.getLogger(__name__)


def load_embedder(spec: str) -> BaseEmbedding:
    """The embedding model a config value names, loaded from local files (``build_embedder``)."""
    from rag.models.embedders import build_embedder

    return build_embedder(spec)


def build_router(config: RagConfig, *, load: Callable[[str], BaseEmbedding] | None = None) -> EmbedderRouter:
    """The embedders ``config.embedding`` names, each encoding ``embedding.batch_size`` texts per call.

    Args:
        config: The settings (``embedding``).
        load: Loads the model of a spec. The app passes its cache, so that stores whose settings differ
            (another batch size, another second model) share one loaded copy of each model. Defaults to
            ``load_embedder``.
    """
    from rag.models.embedding_router import with_batch_size

    load = load or load_embedder
    batch_size = config.embedding.batch_size
    return EmbedderRouter(config.embedding, lambda spec: with_batch_size(load(spec), batch_size))


def build_store(config: RagConfig, router: EmbedderRouter | None = None) -> DocumentStore:
    return DocumentStore(config, router or build_router(config))


def build_llm_handle(config: RagConfig, *, load_embedded: Callable[[], Any] | None = None) -> LLMHandle:
    """The configured LLM (embedded GGUF or OpenAI-compatible server, with a fallback recorded).

    Args:
        config: The settings (``llm`` and ``generation``).
        load_embedded: Returns the embedded model when it is needed (the app passes its cached one).
            Defaults to loading it from ``llm.embedded_model``.
    """
    from rag.models.llms import build_llm

    return build_llm(config.llm, config.generation, DEFAULT_HOME, load_embedded=load_embedded)


def build_llm_runner(config: RagConfig, handle: LLMHandle, *,
                     load_embedded: Callable[[], Any] | None = None) -> LLMRunner:
    """The answering LLM with its mid-request fallback: a server that fails while answering hands over
    to the embedded model once (when ``llm.fallback_to_embedded``), built on first need."""
    from rag.models.llms import load_embedded_llm

    factory = None
    if handle.backend_used == "openai" and config.llm.fallback_to_embedded:
        factory = load_embedded or (lambda: load_embedded_llm(config.llm, config.generation, DEFAULT_HOME))
    return LLMRunner(handle.llm, backend=handle.backend_used, chosen_because=handle.fallback_reason,
                     fallback_factory=factory, queue_timeout_s=config.llm.queue_timeout_s)


def needs_llm(config: RagConfig) -> bool:
    """Whether retrieval alone calls the LLM (query rewrite, HyDE, reflection)."""
    return config.query.rewrite or config.query.hyde or config.reflection.enabled


def build_engine(config: RagConfig, *, store: DocumentStore | None = None, llm: LLMRunner | None = None,
                 reranker: Any = None, with_llm: bool = True, **options: Any) -> CitewiseQueryEngine:
    """The query engine ``config`` describes, over models built here unless they are given.

    Args:
        config: The settings.
        store: The document store. Defaults to one built from ``config``.
        llm: The answering LLM. Defaults to one built from ``config`` when ``with_llm`` or when retrieval
            needs it (``needs_llm``).
        reranker: The cross-encoder. Defaults to one built from ``config`` when rerank is on.
        with_llm: False builds a retrieval-only engine (evaluation, ``rag search``) unless retrieval itself
            needs the LLM. Defaults to True.
        **options: Passed to ``CitewiseQueryEngine`` (``search_mode``, ``llm_groundedness``, ``streaming``).
    """
    from rag.answer.engine import CitewiseQueryEngine

    store = store or build_store(config)
    if llm is None and (with_llm or needs_llm(config)):
        llm = build_llm_runner(config, build_llm_handle(config))
    if reranker is None and config.rerank.enabled:
        reranker = build_reranker(config)
    return CitewiseQueryEngine.from_config(config, store, llm, reranker=reranker, **options)


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
    from rag.answer.engine import model_name
    from rag.prompts import answer_system_prompt

    def run() -> None:
        try:
            prompt = answer_system_prompt("en", model_name(llm))  # rules 1-3, shared by both languages' prompts
            logger.info("warmed up the answer prompt's prefix in %.1f s", warm_up(prompt))
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

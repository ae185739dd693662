"""Choose and build the answering LLM: an OpenAI-compatible server, or the embedded GGUF model.

``build_llm`` health-checks a configured server and, when it does not answer and
``llm.fallback_to_embedded`` is on, loads the bundled model instead, recording why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable
from pathlib import Path

from llama_index.core.llms import LLM

from rag.config import GenerationConfig, LLMConfig
from rag.models.llm_embedded import EmbeddedLLM
from rag.models.llm_openai import LLMUnavailableError, OpenAICompatibleLLM
from rag.models.assets import ModelAssetError, ensure_gguf, spec_for

logger = logging.getLogger(__name__)

__all__ = ["EmbeddedLLM", "LLMHandle", "LLMUnavailableError", "OpenAICompatibleLLM", "build_llm",
           "load_embedded_llm"]


@dataclass(frozen=True)
class LLMHandle:
    """The LLM in use and how it was chosen (shown in the UI)."""

    llm: LLM
    backend_used: str  # "embedded" or "openai"
    model_name: str
    fallback_reason: str = ""


def build_llm(config: LLMConfig, generation: GenerationConfig, cache_dir: Path, *,
              load_embedded: Callable[[], LLM] | None = None) -> LLMHandle:
    """Build the configured LLM, falling back to the embedded model when the server is down.

    Args:
        config: The ``llm`` config section.
        generation: Temperature and answer length.
        cache_dir: Cache root holding ``models/<name>.gguf`` (assembled there on first use).
        load_embedded: Returns the embedded model (the app passes its cached copy, so a server's fallback
            never loads a second one). Defaults to ``load_embedded_llm``.

    Raises:
        LLMUnavailableError: The server is down and fallback is off, or no model could be loaded.
    """
    if config.backend == "openai":
        remote = OpenAICompatibleLLM(
            base_url=config.base_url, model=config.model, api_key_env=config.api_key_env,
            connect_timeout_s=config.connect_timeout_s, request_timeout_s=config.request_timeout_s,
            first_response_timeout_s=config.first_response_timeout_s,
            temperature=generation.temperature, max_tokens=generation.max_answer_tokens, context_window=config.n_ctx)
        try:
            remote.health_check()
            return LLMHandle(remote, "openai", config.model)
        except LLMUnavailableError as exc:
            if not config.fallback_to_embedded:
                raise
            logger.warning("%s; falling back to the embedded model %s", exc, config.embedded_model)
            reason = str(exc)
    else:
        reason = ""
    try:
        embedded = load_embedded() if load_embedded else load_embedded_llm(config, generation, cache_dir)
    except (ModelAssetError, OSError, ImportError, ValueError) as exc:
        prefix = f"{reason}; and the embedded model failed too: " if reason else "the embedded model failed: "
        raise LLMUnavailableError(f"{prefix}{exc}") from exc
    return LLMHandle(embedded, "embedded", embedded.model_name, reason)


def load_embedded_llm(config: LLMConfig, generation: GenerationConfig, cache_dir: Path) -> EmbeddedLLM:
    """Assemble (first use) and verify the configured GGUF, then load it with llama.cpp."""
    path = ensure_gguf(config.embedded_model, Path(cache_dir))
    spec = spec_for(config.embedded_model) or spec_for(path)
    return EmbeddedLLM.load(path, spec=spec, model_name=spec.name if spec else path.stem, n_ctx=config.n_ctx,
                            n_threads=config.n_threads, temperature=generation.temperature,
                            max_tokens=generation.max_answer_tokens)

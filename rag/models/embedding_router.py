"""Which embedder reads which text, loaded lazily because the multilingual model is slow to start.

With ``routing="per_language"`` English chunks go to ``english_model`` and Chinese chunks to
``chinese_model``; with ``routing="single"`` every chunk goes to ``chinese_model``, which must then be
multilingual (the bundled e5-small is). A query is embedded once per model that holds vectors, so an
English question still reaches Chinese chunks through the multilingual space.
"""

from __future__ import annotations

import threading
from typing import Callable

from llama_index.core.base.embeddings.base import BaseEmbedding

from rag.config import EmbeddingConfig

EmbedderFactory = Callable[[str], BaseEmbedding]


class EmbedderRouter:
    def __init__(self, config: EmbeddingConfig, factory: EmbedderFactory) -> None:
        self._config = config
        self._factory = factory
        self._loaded: dict[str, BaseEmbedding] = {}
        self._lock = threading.Lock()

    def spec_for(self, language: str) -> str:
        if self._config.routing == "single" or language == "zh":
            return self._config.chinese_model
        return self._config.english_model

    def for_language(self, language: str) -> BaseEmbedding:
        return self.for_spec(self.spec_for(language))

    def specs(self) -> list[str]:
        return sorted({self.spec_for("en"), self.spec_for("zh")})

    def loaded(self) -> list[BaseEmbedding]:
        return list(self._loaded.values())

    def for_model_id(self, model_id: str) -> BaseEmbedding | None:
        """The configured embedder whose vectors are stored under ``model_id``, or None."""
        for spec in self.specs():
            embedder = self.for_spec(spec)
            if model_id_of(embedder) == model_id:
                return embedder
        return None

    def for_spec(self, spec: str) -> BaseEmbedding:
        """The embedder for a model spec, loaded on first use."""
        with self._lock:
            if spec not in self._loaded:
                self._loaded[spec] = self._factory(spec)
            return self._loaded[spec]


def model_id_of(embedder: BaseEmbedding) -> str:
    return str(getattr(embedder, "model_id", None) or embedder.model_name)

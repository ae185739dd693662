"""Which embedder reads which text, loaded lazily because the multilingual model is slow to start.

With ``routing="per_language"`` English chunks go to ``english_model`` and Chinese chunks to
``chinese_model``; with ``routing="single"`` every chunk goes to ``chinese_model``, which must then be
multilingual (the bundled e5-small is). English chunks are also embedded by ``second_english_model``
when one is set (by default e5-small, searched as a dense list of its own for English questions). A
query is embedded once per model that holds vectors, so an English question still reaches Chinese
chunks through the multilingual space.

Questions are embedded in simplified script, as chunks are (``rag.ingest.embedding.embedding_text``):
e5-small matches a traditional question with a simplified table far less well than with the same
question in simplified characters (docs/documents.md, ``script17``).

Query vectors are cached per (model, text) in ``query_vectors``: a question asked again, compared
under two settings, or re-searched by reflection is embedded once.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding

from rag.caching import LRUCache
from rag.config import EmbeddingConfig
from rag.text.script import to_simplified

EmbedderFactory = Callable[[str], BaseEmbedding]


QUERY_CACHE_SIZE = 1024
# The form of the text every embedder reads, chunks and questions alike: 2 since Chinese is read in simplified
# script. A library records the form its vectors were made from (``rag.ingest.embedding_upgrade``) and
# evaluation stores name it in their fingerprint, so vectors of an older form are never read as current.
EMBEDDING_TEXT_VERSION = 2
EMBEDDING_TEXT_FACT = "embedding_text_version"  # the registry's record of it (a library without one: version 1)
# query vectors of two models are computed side by side; their libraries release the GIL while they compute
_QUERY_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="citewise-query-vector")
PRIME_BATCH = 256


class EmbedderRouter:
    """Chooses and lazily loads the embedder of each language, and caches query vectors.

    Args:
        config: The ``embedding`` config section.
        factory: Builds an embedder from a model spec (``rag.models.embedders.build_embedder``).
        query_cache_size: Query vectors kept. Defaults to 1024.
    """

    def __init__(self, config: EmbeddingConfig, factory: EmbedderFactory, *,
                 query_cache_size: int = QUERY_CACHE_SIZE) -> None:
        self._config = config
        self._factory = factory
        self._loaded: dict[str, BaseEmbedding] = {}
        self._batch_size: int | None = None  # set by set_batch_size; else the factory's
        self._lock = threading.Lock()
        self.query_vectors: LRUCache[list[float]] = LRUCache(query_cache_size)

    def query_vector(self, model_id: str, text: str) -> list[float]:
        """The query embedding of ``text`` by the model storing vectors as ``model_id`` (cached)."""
        embedder = self.for_model_id(model_id)
        if embedder is None:
            raise KeyError(f"no configured embedding model makes the vectors stored as {model_id}")
        return self.query_vectors.get_or_compute((model_id, text),
                                                 lambda: embedder.get_query_embedding(to_simplified(text)))

    def query_vectors_at_once(self, model_ids: Sequence[str], texts: Sequence[str]) -> None:
        """Embed ``texts`` with every model of ``model_ids`` side by side (into the cache), not one after another.

        An English question needs MiniLM's and e5-small's query vectors; one after the other they took
        most of a search's time. Models no configured embedder makes are skipped (the search says why).
        """
        wanted = [(m, t) for m in model_ids for t in texts if (m, t) not in self.query_vectors
                  and self.for_model_id(m) is not None]
        if len(wanted) < 2:
            return
        futures = [_QUERY_POOL.submit(self.query_vector, m, t) for m, t in wanted[1:]]
        self.query_vector(*wanted[0])
        for future in futures:
            future.result()

    def prime_queries(self, model_ids: Iterable[str], queries: Sequence[str]) -> None:
        """Embed many queries in batches ahead of time (evaluation runs thousands); the cache grows to fit."""
        model_ids = list(model_ids)
        needed = len(queries) * max(1, len(model_ids)) + 16
        if self.query_vectors.size < needed:
            self.query_vectors = LRUCache(needed)
        for model_id in model_ids:
            embedder = self.for_model_id(model_id)
            batch = getattr(embedder, "get_query_embedding_batch", None)
            if batch is None:
                continue
            for start in range(0, len(queries), PRIME_BATCH):
                texts = list(queries[start:start + PRIME_BATCH])
                for text, vector in zip(texts, batch([to_simplified(t) for t in texts])):
                    self.query_vectors.put((model_id, text), vector)

    def spec_for(self, language: str) -> str:
        """The model that reads ``language`` (its chunks' first vectors, its questions' own space)."""
        if self._config.routing == "single" or language == "zh":
            return self._config.chinese_model
        return self._config.english_model

    def specs_for(self, language: str) -> list[str]:
        """Every model that embeds chunks in ``language``: its own, then the second English one for English."""
        specs = [self.spec_for(language)]
        second = self.second_english_spec()
        if language != "zh" and second and second not in specs:
            specs.append(second)
        return specs

    def second_english_spec(self) -> str:
        """``second_english_model``, or "" when it is off or is the model English chunks already go to."""
        second = self._config.second_english_model.strip()
        return "" if not second or second == self.spec_for("en") else second

    def for_language(self, language: str) -> BaseEmbedding:
        return self.for_spec(self.spec_for(language))

    def second_english(self) -> BaseEmbedding | None:
        """The second English embedder, loaded on first use, or None when there is none."""
        spec = self.second_english_spec()
        return self.for_spec(spec) if spec else None

    def specs(self) -> list[str]:
        return sorted({*self.specs_for("en"), self.spec_for("zh")})

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
                embedder = self._factory(spec)
                self._loaded[spec] = embedder if self._batch_size is None else with_batch_size(embedder,
                                                                                                self._batch_size)
            return self._loaded[spec]

    def set_batch_size(self, batch_size: int) -> None:
        """Encode ``batch_size`` texts per call from now on, with every model.

        A speed setting: the vectors are the same, so a store keeps its router (and its library's
        keyword index, ingest queue and background embedder) when only this changes.
        """
        with self._lock:
            if batch_size == self._batch_size:
                return
            self._batch_size = batch_size
            self._loaded = {spec: with_batch_size(e, batch_size) for spec, e in self._loaded.items()}


def with_batch_size(embedder: BaseEmbedding, batch_size: int) -> BaseEmbedding:
    """``embedder`` encoding ``batch_size`` texts per call, sharing its loaded model (and its lock).

    A pydantic copy keeps the private attributes of the original, so a second batch size costs a small
    wrapper, not a second copy of the weights.
    """
    if embedder.embed_batch_size == batch_size:
        return embedder
    return embedder.model_copy(update={"embed_batch_size": batch_size})


def model_id_of(embedder: BaseEmbedding) -> str:
    return str(getattr(embedder, "model_id", None) or embedder.model_name)

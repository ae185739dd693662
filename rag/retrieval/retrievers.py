"""llama-index retrievers over our store: dense (Chroma, one space per embedder) and BM25.

Both return ``NodeWithScore`` built from stored chunks, so every later stage sees the same node
shape whichever side found it. Document filters are applied inside the stores, not after.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterable, Sequence

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.documents import Chunk
from rag.models.embedding_router import EmbedderRouter, model_id_of
from rag.index.keywords import KeywordIndex
from rag.text.language import detect_language
from rag.index.vectors import VectorHit, VectorStore


class QueryEmbeddingCache:
    """LRU of query vectors keyed by (model, text): repeated and compared queries embed once."""

    def __init__(self, size: int = 512) -> None:
        self._items: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, model_id: str, text: str, compute) -> list[float]:
        key = (model_id, text)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        vector = compute(text)
        with self._lock:
            self._items[key] = vector
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return vector


def prime_query_cache(cache: QueryEmbeddingCache, router: EmbedderRouter, model_ids: Iterable[str],
                      queries: Sequence[str]) -> None:
    """Embed many queries in batches ahead of time (evaluation runs thousands of them)."""
    for model_id in model_ids:
        embedder = router.for_model_id(model_id)
        batch = getattr(embedder, "get_query_embedding_batch", None)
        if embedder is None or batch is None:
            continue
        for start in range(0, len(queries), 256):
            texts = list(queries[start:start + 256])
            for text, vector in zip(texts, batch(texts)):
                cache.get(model_id, text, lambda _text, vector=vector: vector)


def chunk_node(chunk: Chunk, score: float) -> NodeWithScore:
    return NodeWithScore(node=chunk.to_node(), score=score)


class VectorRetriever(BaseRetriever):
    """Cosine search in every embedding space that holds vectors, merged by rank.

    Scores from different models are not comparable (e5 similarities sit around 0.8 even for
    unrelated text), so the spaces are interleaved rank by rank; each node keeps its own cosine as
    its score. A Chinese query skips spaces whose model cannot read Chinese. After each call,
    ``notes`` says what was not searched and why (vectors of a model no longer configured, a
    configured model that stands in for one that is missing).
    """

    def __init__(self, vectors: VectorStore, router: EmbedderRouter, *, top_k: int,
                 doc_ids: Iterable[str] | None = None, cache: QueryEmbeddingCache | None = None) -> None:
        super().__init__()
        self._vectors = vectors
        self._router = router
        self._top_k = top_k
        self._doc_ids = None if doc_ids is None else list(doc_ids)
        self._cache = cache or QueryEmbeddingCache()
        self.notes: list[str] = []

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        per_space: list[list[VectorHit]] = []
        self.notes = []
        language = detect_language(query_bundle.query_str)
        spaces = self._spaces(language)
        if language == "zh" and not spaces and self._vectors.model_ids():
            self.notes.append("the question is in Chinese, but no document holds Chinese text (nothing is stored "
                              "in the Chinese embedding space), and the other spaces cannot read Chinese")
        for model_id in spaces:
            embedder = self._router.for_model_id(model_id)
            if embedder is None:
                self.notes.append(f"vectors stored by {model_id} were not searched: no configured embedding model "
                                  f"makes them (re-index those documents, or configure that model again)")
                continue
            if getattr(embedder, "fallback_reason", ""):
                self.notes.append(embedder.fallback_reason)
            vectors = [self._cache.get(model_id, text, embedder.get_query_embedding)
                       for text in query_bundle.embedding_strs]
            query_vector = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
            per_space.append(self._vectors.query(model_id, query_vector, self._top_k, doc_ids=self._doc_ids))
        merged: list[NodeWithScore] = []
        seen: set[str] = set()
        for rank in range(max((len(hits) for hits in per_space), default=0)):
            for hits in per_space:
                if rank < len(hits) and hits[rank].chunk_id not in seen:
                    seen.add(hits[rank].chunk_id)
                    merged.append(chunk_node(Chunk.from_metadata(hits[rank].text, hits[rank].metadata),
                                             hits[rank].score))
        return merged[: self._top_k]

    def _spaces(self, language: str) -> list[str]:
        stored = self._vectors.model_ids()
        if language == "zh":
            chinese = model_id_of(self._router.for_language("zh"))
            return [m for m in stored if m == chinese]
        return stored


class KeywordRetriever(BaseRetriever):
    """BM25 over the persisted index; hits that share no token with the query are dropped."""

    def __init__(self, keywords: KeywordIndex, *, top_k: int, doc_ids: Iterable[str] | None = None,
                 phrase_weight: float = 0.5) -> None:
        super().__init__()
        self._keywords = keywords
        self._phrase_weight = phrase_weight
        self._top_k = top_k
        self._doc_ids = None if doc_ids is None else list(doc_ids)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._keywords.search(query_bundle.query_str, self._top_k, doc_ids=self._doc_ids,
                                     phrase_weight=self._phrase_weight)
        chunks = self._keywords.get([h.chunk_id for h in hits])
        return [chunk_node(chunks[h.chunk_id], h.score) for h in hits if h.chunk_id in chunks]


def node_ids(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]

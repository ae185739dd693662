"""Maximal marginal relevance: relevant passages that are not near-duplicates of each other."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar, Sequence

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.models.embedding_router import model_id_of
from rag.retrieval.nodes import annotate_node, node_text
from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import as_search_query, expanded, report
from rag.text.language import detect_language
from rag.text.script import to_simplified

logger = logging.getLogger(__name__)


class StoredVectors:
    """Vectors for MMR from the store: each candidate's stored vector and the (cached) query vector.

    Re-embedding 20–30 candidate texts per query costs ~0.5 s with MiniLM and tens of seconds with e5 on
    2 cores; the vectors are already in Chroma, one ``get`` away. The embedder is the one of the query's
    language (Chinese when the query or any candidate is Chinese). Any failure leaves the nodes without
    vectors, and MMR embeds their texts itself.

    Args:
        store: The ``DocumentStore`` (its router and Chroma collections).
    """

    def __init__(self, store: Any) -> None:
        self._store = store

    def prepare(self, query: str, nodes: Sequence[NodeWithScore]
                ) -> tuple[BaseEmbedding, list[NodeWithScore], list[float] | None]:
        """The embedder to use, node copies carrying stored vectors, and the query vector (or None)."""
        router = self._store.router
        chinese = detect_language(query) == "zh" or any(n.node.metadata.get("language") == "zh" for n in nodes)
        embedder = router.for_language("zh" if chinese else "en")
        try:
            model_id = model_id_of(embedder)
            query_vector = router.query_vector(model_id, query)
            stored = self._store.vectors.get(model_id, [n.node.node_id for n in nodes], with_embeddings=True)
        except Exception as exc:  # degrade: MMR embeds the texts
            logger.info("stored vectors unavailable for MMR (%s); it will embed the texts", exc)
            return embedder, list(nodes), None
        out = []
        for item in nodes:
            vector = stored.get(item.node.node_id, {}).get("embedding")
            out.append(item if vector is None else
                       NodeWithScore(node=item.node.model_copy(update={"embedding": list(vector)}), score=item.score))
        return embedder, out, query_vector


class MMRPostprocessor(TracedPostprocessor):
    """Greedily picks ``argmax λ·rel(d) − (1−λ)·max_{s ∈ selected} sim(d, s)``.

    ``rel`` is the cosine between the query and node embeddings and ``sim`` the cosine between node
    embeddings. The penalty is the maximum over everything already selected (llama-index's own helper only
    looks at the latest pick). Node embeddings come from ``node.embedding`` when present and of the query's
    dimension (``vectors`` can supply them from the store); the rest are embedded in one
    ``get_text_embedding_batch`` call. If embedding fails, the first ``top_n`` nodes are kept in their
    incoming order and the stage says why; given nodes, the result is never empty. Selected nodes keep
    their score; ``metadata["mmr_score"]`` holds the MMR objective at selection.

    Args:
        embed_model: A llama-index ``BaseEmbedding`` (``get_query_embedding``, ``get_text_embedding_batch``);
            may be None when ``vectors`` is given.
        top_n: How many nodes to keep (grows with reflection's widening). Defaults to 5.
        lambda_mult: 1.0 ranks by relevance only, 0.0 by diversity only. Defaults to 0.7.
        vectors: A ``StoredVectors`` (or anything with its ``prepare``) choosing the embedder per query and
            attaching stored vectors. Defaults to none.
    """

    stage_name: ClassVar[str] = "mmr"
    top_n: int = Field(default=5, ge=1)
    lambda_mult: float = Field(default=0.7, ge=0.0, le=1.0)
    _embed_model: Any = PrivateAttr()
    _vectors: Any = PrivateAttr()

    def __init__(self, embed_model: Any = None, top_n: int = 5, lambda_mult: float = 0.7, *,
                 vectors: Any = None, **kwargs: Any) -> None:
        if vectors is None and not (hasattr(embed_model, "get_query_embedding")
                                    and hasattr(embed_model, "get_text_embedding_batch")):
            raise TypeError("embed_model needs get_query_embedding and get_text_embedding_batch")
        super().__init__(top_n=top_n, lambda_mult=lambda_mult, **kwargs)
        self._embed_model = embed_model
        self._vectors = vectors

    @classmethod
    def class_name(cls) -> str:
        return "MMRPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("MMRPostprocessor needs a query bundle.")
        top_n = expanded(self.top_n, as_search_query(query_bundle).expansion)
        if len(nodes) <= 1:
            return list(nodes)
        try:
            query, docs = self._embeddings(nodes, query_bundle)
        except Exception as exc:  # degrade: keep the incoming order
            report(query_bundle, fallback=f"embedding failed ({type(exc).__name__}: {exc}); "
                                          f"kept the first {top_n} in order")
            return list(nodes[:top_n])
        relevance = docs @ query
        similarity = docs @ docs.T
        selected: list[int] = []
        objective: dict[int, float] = {}
        remaining = list(range(len(nodes)))
        while remaining and len(selected) < top_n:
            best, best_key = remaining[0], (-math.inf, -math.inf)
            for i in remaining:
                penalty = float(similarity[i, selected].max()) if selected else 0.0
                value = self.lambda_mult * float(relevance[i]) - (1.0 - self.lambda_mult) * penalty
                if (value, float(relevance[i])) > best_key:  # ties: more relevant, then earlier
                    best, best_key = i, (value, float(relevance[i]))
            selected.append(best)
            objective[best] = best_key[0]
            remaining.remove(best)
        return [annotate_node(nodes[i], mmr_score=objective[i]) for i in selected]

    def _embeddings(self, nodes: Sequence[NodeWithScore], query_bundle: QueryBundle) -> tuple[np.ndarray, np.ndarray]:
        embed_model, query = self._embed_model, query_bundle.embedding
        if self._vectors is not None:
            embed_model, nodes, stored_query = self._vectors.prepare(query_bundle.query_str, nodes)
            query = query or stored_query
        if query is None or len(query) == 0:
            query = embed_model.get_query_embedding(to_simplified(query_bundle.query_str))
        query = _unit(np.asarray(query, dtype=float))
        vectors: list[Any] = [n.node.embedding if n.node.embedding is not None and len(n.node.embedding) == len(query)
                              else None for n in nodes]
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            # in simplified script, as stored vectors and query vectors are (rag.ingest.embedding.embedding_text)
            fresh = embed_model.get_text_embedding_batch([to_simplified(node_text(nodes[i])) for i in missing])
            if len(fresh) != len(missing):
                raise ValueError(f"embedder returned {len(fresh)} vectors for {len(missing)} texts")
            for i, vector in zip(missing, fresh):
                vectors[i] = vector
        return query, np.vstack([_unit(np.asarray(v, dtype=float)) for v in vectors])


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector

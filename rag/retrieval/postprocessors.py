"""Node postprocessors that run after fusion: threshold, cross-encoder rerank, MMR, context budget.

All follow llama-index's shape (pydantic fields with bounds, collaborators in ``PrivateAttr``, only
``_postprocess_nodes`` implemented) and take their models from the caller. None of them mutates its
input nodes: annotated nodes are copies (``rag.retrieval.fusion.annotate_node``), with the new metadata keys
hidden from the embedder and the LLM.

Each postprocessor exposes ``last_reason``: why its latest call (in the calling thread) degraded,
dropped everything, or fell back; empty when it ran normally. Copy it into the stage trace.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Callable, Sequence

import numpy as np
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from rag.retrieval.fusion import annotate_node
from rag.text.language import count_tokens

logger = logging.getLogger(__name__)


class _PerThread(threading.local):
    reason: str = ""

    def __deepcopy__(self, memo: dict) -> _PerThread:
        return _PerThread()

    def __reduce__(self) -> tuple:
        return (_PerThread, ())


class ReportingPostprocessor(BaseNodePostprocessor):
    """Base for postprocessors that report why they degraded through ``last_reason``."""

    _state: _PerThread = PrivateAttr(default_factory=_PerThread)

    @property
    def last_reason(self) -> str:
        """Why this thread's latest call degraded or returned nothing; empty if it ran normally."""
        return self._state.reason

    def _report(self, reason: str) -> None:
        """Set ``last_reason``; every ``_postprocess_nodes`` starts with ``self._report("")``."""
        self._state.reason = reason
        if reason:
            logger.info("%s: %s", self.class_name(), reason)


def _node_text(item: NodeWithScore, mode: MetadataMode = MetadataMode.EMBED) -> str:
    return item.node.get_content(metadata_mode=mode)


class MMRPostprocessor(ReportingPostprocessor):
    """Maximal marginal relevance: relevant nodes that are not near-duplicates of each other.

    Greedily picks ``argmax λ·rel(d) − (1−λ)·max_{s ∈ selected} sim(d, s)``, where ``rel`` is the
    cosine between the query and node embeddings and ``sim`` the cosine between node embeddings. The
    penalty is the maximum over everything already selected (llama-index's own helper only looks at
    the latest pick). Node embeddings come from ``node.embedding`` when present and of the query's
    dimension; the rest are embedded in one ``get_text_embedding_batch`` call. If embedding fails, the
    first ``top_n`` nodes are returned in their incoming order and ``last_reason`` says why; given
    nodes, the result is never empty.

    Selected nodes keep their score; ``metadata["mmr_score"]`` holds the MMR objective at selection.

    Args:
        embed_model: Anything with ``get_query_embedding(str)`` and ``get_text_embedding_batch(list)``
            (a llama-index ``BaseEmbedding``).
        top_n: How many nodes to keep. Defaults to 5.
        lambda_mult: 1.0 ranks by relevance only, 0.0 by diversity only. Defaults to 0.7.
    """

    top_n: int = Field(default=5, ge=1)
    lambda_mult: float = Field(default=0.7, ge=0.0, le=1.0)
    _embed_model: Any = PrivateAttr()

    def __init__(self, embed_model: Any, top_n: int = 5, lambda_mult: float = 0.7, **kwargs: Any) -> None:
        if not (hasattr(embed_model, "get_query_embedding") and hasattr(embed_model, "get_text_embedding_batch")):
            raise TypeError("embed_model needs get_query_embedding and get_text_embedding_batch")
        super().__init__(top_n=top_n, lambda_mult=lambda_mult, **kwargs)
        self._embed_model = embed_model

    @classmethod
    def class_name(cls) -> str:
        return "MMRPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        self._report("")
        if query_bundle is None:
            raise ValueError("MMRPostprocessor needs a query bundle.")
        if len(nodes) <= 1:
            return list(nodes)
        try:
            query, docs = self._embeddings(nodes, query_bundle)
        except Exception as exc:  # degrade: keep the incoming order
            self._report(f"embedding failed ({type(exc).__name__}: {exc}); kept the first {self.top_n} in order")
            return list(nodes[: self.top_n])
        relevance = docs @ query
        similarity = docs @ docs.T
        selected: list[int] = []
        objective: dict[int, float] = {}
        remaining = list(range(len(nodes)))
        while remaining and len(selected) < self.top_n:
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
        query = query_bundle.embedding
        if query is None or len(query) == 0:
            query = self._embed_model.get_query_embedding(query_bundle.query_str)
        query = _unit(np.asarray(query, dtype=float))
        vectors: list[Any] = [n.node.embedding if n.node.embedding is not None and len(n.node.embedding) == len(query)
                              else None for n in nodes]
        missing = [i for i, v in enumerate(vectors) if v is None]
        if missing:
            fresh = self._embed_model.get_text_embedding_batch([_node_text(nodes[i]) for i in missing])
            if len(fresh) != len(missing):
                raise ValueError(f"embedder returned {len(fresh)} vectors for {len(missing)} texts")
            for i, vector in zip(missing, fresh):
                vectors[i] = vector
        docs = np.vstack([_unit(np.asarray(v, dtype=float)) for v in vectors])
        return query, docs


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector


def blend_scores(rerank: Sequence[float], retrieval: Sequence[float | None], weight: float) -> list[float]:
    """``weight * minmax(rerank) + (1 - weight) * minmax(retrieval)`` per candidate.

    A small in-domain reranker is better at telling close candidates apart than at overruling a
    confident first stage; blending keeps both (weight 1.0 is pure rerank). Min-max puts the two on
    one scale within the candidate list; a constant list contributes 0.
    """
    def minmax(values: Sequence[float | None]) -> list[float]:
        clean = [float(v) if v is not None and math.isfinite(float(v)) else None for v in values]
        present = [v for v in clean if v is not None]
        low, high = (min(present), max(present)) if present else (0.0, 0.0)
        return [0.0 if v is None or high <= low else (v - low) / (high - low) for v in clean]

    if len(rerank) != len(retrieval):
        raise ValueError(f"{len(rerank)} rerank scores for {len(retrieval)} candidates")
    return [weight * a + (1.0 - weight) * b for a, b in zip(minmax(rerank), minmax(retrieval))]


class CrossEncoderRerankPostprocessor(ReportingPostprocessor):
    """Rerank the first ``candidates`` nodes with a cross-encoder and keep the best ``top_n``.

    ``metadata["rerank_score"]`` is the scorer's score and the incoming score is kept in
    ``metadata["retrieval_score"]``. The new ``node.score`` is ``blend_scores(rerank, retrieval,
    blend)``: with ``blend`` 1.0 (the default) it is the scorer's score itself. Nodes beyond ``candidates`` are dropped. If
    the scorer raises or returns the wrong number of scores, the first ``top_n`` nodes are returned
    unchanged and ``last_reason`` says why.

    Args:
        scorer: Anything with ``predict(list[tuple[str, str]]) -> sequence of floats``, such as a
            sentence-transformers ``CrossEncoder`` (built by the caller, e.g. from a local folder).
        top_n: How many nodes to keep. Defaults to 5.
        candidates: How many incoming nodes to score. Defaults to 20.
        blend: Weight of the reranker against the retrieval score (min-max normalised within the
            candidates); 1.0 ranks by the reranker alone. Defaults to 1.0.
    """

    top_n: int = Field(default=5, ge=1)
    candidates: int = Field(default=20, ge=1)
    blend: float = Field(default=1.0, ge=0.0, le=1.0)
    _scorer: Any = PrivateAttr()

    def __init__(self, scorer: Any, top_n: int = 5, candidates: int = 20, blend: float = 1.0, **kwargs: Any) -> None:
        if not callable(getattr(scorer, "predict", None)):
            raise TypeError("scorer needs a predict(list[tuple[str, str]]) method")
        if candidates < top_n:
            raise ValueError(f"candidates ({candidates}) must be >= top_n ({top_n})")
        super().__init__(top_n=top_n, candidates=candidates, blend=blend, **kwargs)
        self._scorer = scorer

    @classmethod
    def class_name(cls) -> str:
        return "CrossEncoderRerankPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        self._report("")
        if query_bundle is None:
            raise ValueError("CrossEncoderRerankPostprocessor needs a query bundle.")
        pool = list(nodes[: self.candidates])
        if not pool:
            return []
        pairs = [(query_bundle.query_str, _node_text(n)) for n in pool]
        try:
            scores = [float(s) for s in np.asarray(self._scorer.predict(pairs), dtype=float).reshape(-1)]
            if len(scores) != len(pool):
                raise ValueError(f"scorer returned {len(scores)} scores for {len(pool)} pairs")
        except Exception as exc:  # degrade: keep the retrieval order
            self._report(f"rerank failed ({type(exc).__name__}: {exc}); kept retrieval order")
            return pool[: self.top_n]
        final = scores if self.blend >= 1.0 else blend_scores(scores, [n.score for n in pool], self.blend)
        order = sorted(range(len(pool)), key=lambda i: -final[i] if math.isfinite(final[i]) else math.inf)
        return [annotate_node(pool[i], score=final[i], rerank_score=scores[i], retrieval_score=pool[i].score)
                for i in order[: self.top_n]]


class SimilarityThresholdPostprocessor(ReportingPostprocessor):
    """Drop nodes whose ``metadata["relevance"]`` is below ``threshold``.

    ``relevance`` is set by ``FusionRetriever`` (in [0, 1], the same meaning in rrf and weighted
    mode). Nodes without the key are kept, since they cannot be judged. When every node falls
    below the threshold the result is ``[]`` and ``last_reason`` says so, with the best relevance
    seen, so the caller can tell "nothing relevant" from "nothing retrieved".

    Args:
        threshold: Minimum relevance in [0, 1]; 0 keeps everything. Defaults to 0.
        metadata_key: Where to read the relevance. Defaults to ``"relevance"``.
    """

    threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    metadata_key: str = Field(default="relevance")

    def __init__(self, threshold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(threshold=threshold, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "SimilarityThresholdPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        self._report("")
        kept, dropped, best = [], 0, -math.inf
        for item in nodes:
            value = item.node.metadata.get(self.metadata_key)
            if value is None:
                kept.append(item)
                continue
            best = max(best, float(value))
            if float(value) >= self.threshold:
                kept.append(item)
            else:
                dropped += 1
        if nodes and not kept:
            self._report(f"all {len(nodes)} candidates are below the relevance threshold "
                         f"{self.threshold:.2f} (best {best:.3f})")
        elif dropped:
            logger.debug("threshold %.2f dropped %d of %d nodes", self.threshold, dropped, len(nodes))
        return kept


class ContextBudgetPostprocessor(ReportingPostprocessor):
    """Keep nodes in order while their text fits in ``max_tokens``; stop at the first that does not.

    The text counted is what the LLM sees (``MetadataMode.LLM``). If not even the first node fits,
    it is truncated to the budget (at a word boundary when possible, ``metadata["truncated"]`` True)
    and returned alone, so the result is never empty when given nodes with text.

    Args:
        max_tokens: The context budget. Defaults to 900.
        count_tokens: ``str -> int``. Defaults to ``rag.text.language.count_tokens`` (words, plus one per
            CJK character), the unit ``ChunkingConfig.chunk_size`` uses.
    """

    max_tokens: int = Field(default=900, ge=1)
    _count_tokens: Callable[[str], int] = PrivateAttr()

    def __init__(self, max_tokens: int = 900, count_tokens: Callable[[str], int] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(max_tokens=max_tokens, **kwargs)
        self._count_tokens = count_tokens or _default_count_tokens

    @classmethod
    def class_name(cls) -> str:
        return "ContextBudgetPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        self._report("")
        kept: list[NodeWithScore] = []
        used = 0
        for item in nodes:
            cost = self._count_tokens(_node_text(item, MetadataMode.LLM))
            if used + cost > self.max_tokens:
                break
            kept.append(item)
            used += cost
        if len(kept) < len(nodes):
            logger.debug("context budget %d kept %d of %d nodes", self.max_tokens, len(kept), len(nodes))
        if nodes and not kept:
            truncated = self._truncate(nodes[0])
            if truncated is None:
                self._report(f"the first node cannot be cut to fit {self.max_tokens} tokens")
                return []
            self._report(f"first node exceeds the {self.max_tokens}-token budget; truncated it")
            return [truncated]
        return kept

    def _truncate(self, item: NodeWithScore) -> NodeWithScore | None:
        text = item.node.get_content(metadata_mode=MetadataMode.NONE)
        overhead = max(0, self._count_tokens(_node_text(item, MetadataMode.LLM)) - self._count_tokens(text))
        budget = self.max_tokens - overhead
        low, high = 0, len(text)  # largest prefix length whose count fits
        while low < high:
            middle = (low + high + 1) // 2
            if self._count_tokens(text[:middle]) <= budget:
                low = middle
            else:
                high = middle - 1
        prefix = text[:low]
        if low < len(text) and prefix and _latin(text[low]) and _latin(prefix[-1]) and " " in prefix:
            prefix = prefix[: prefix.rfind(" ")]  # don't end mid-word
        prefix = prefix.rstrip()
        if not prefix:
            return None
        copy = annotate_node(item, truncated=True)
        copy.node = copy.node.model_copy(update={"text": prefix})
        return copy


def _latin(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _default_count_tokens(text: str) -> int:
    return count_tokens(text)

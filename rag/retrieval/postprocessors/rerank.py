"""Cross-encoder reranking of the first fused candidates, optionally blended with the retrieval score."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar, Sequence

import numpy as np
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.nodes import annotate_node, node_text
from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import as_search_query, expanded, report
from rag.text.language import detect_language

logger = logging.getLogger(__name__)


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


def reads_language(languages: str, query: str) -> bool:
    """Whether a reranker configured for ``languages`` (``all`` or e.g. ``en,zh``) can read ``query``."""
    allowed = {part.strip().lower() for part in languages.split(",") if part.strip()}
    return "all" in allowed or detect_language(query) in allowed


class CrossEncoderRerankPostprocessor(TracedPostprocessor):
    """Rerank the first ``candidates`` nodes with a cross-encoder and keep the best ``top_n``.

    ``metadata["rerank_score"]`` is the scorer's score and the incoming score is kept in
    ``metadata["retrieval_score"]``. The new ``node.score`` is ``blend_scores(rerank, retrieval, blend)``:
    with ``blend`` 1.0 (the default) it is the scorer's score itself. Nodes beyond ``candidates`` are
    dropped. If the scorer is missing, raises or returns the wrong number of scores, or cannot read the
    query's language, the first ``top_n`` nodes are kept in retrieval order and the stage says why.

    Args:
        scorer: Anything with ``predict(list[tuple[str, str]]) -> sequence of floats``, such as a
            sentence-transformers ``CrossEncoder`` built by the caller from a local folder; None records
            that rerank is on without a model.
        top_n: How many nodes to keep (grows with reflection's widening). Defaults to 5.
        candidates: How many incoming nodes to score. Defaults to 20.
        blend: Weight of the reranker against the retrieval score; 1.0 ranks by the reranker alone.
            Defaults to 1.0.
        languages: Query languages the model reads, ``all`` or e.g. ``en,zh``. Defaults to ``all``.
    """

    stage_name: ClassVar[str] = "rerank"
    top_n: int = Field(default=5, ge=1)
    candidates: int = Field(default=20, ge=1)
    blend: float = Field(default=1.0, ge=0.0, le=1.0)
    languages: str = Field(default="all")
    _scorer: Any = PrivateAttr()

    def __init__(self, scorer: Any, top_n: int = 5, candidates: int = 20, blend: float = 1.0,
                 languages: str = "all", **kwargs: Any) -> None:
        if scorer is not None and not callable(getattr(scorer, "predict", None)):
            raise TypeError("scorer needs a predict(list[tuple[str, str]]) method")
        if candidates < top_n:
            raise ValueError(f"candidates ({candidates}) must be >= top_n ({top_n})")
        super().__init__(top_n=top_n, candidates=candidates, blend=blend, languages=languages, **kwargs)
        self._scorer = scorer

    @classmethod
    def class_name(cls) -> str:
        return "CrossEncoderRerankPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("CrossEncoderRerankPostprocessor needs a query bundle.")
        expansion = as_search_query(query_bundle).expansion
        top_n, candidates = expanded(self.top_n, expansion), expanded(self.candidates, expansion)
        if self._scorer is None:
            report(query_bundle, fallback="rerank is on but no cross-encoder is loaded; skipped")
            return list(nodes)
        if not reads_language(self.languages, query_bundle.query_str):
            report(query_bundle, fallback=f"the reranker reads {self.languages} only; skipped for a "
                                          f"{detect_language(query_bundle.query_str)} query")
            return list(nodes)
        pool = list(nodes[: max(candidates, top_n)])
        if not pool:
            return []
        pairs = [(query_bundle.query_str, node_text(n)) for n in pool]
        try:
            scores = [float(s) for s in np.asarray(self._scorer.predict(pairs), dtype=float).reshape(-1)]
            if len(scores) != len(pool):
                raise ValueError(f"scorer returned {len(scores)} scores for {len(pool)} pairs")
        except Exception as exc:  # degrade: keep the retrieval order
            report(query_bundle, fallback=f"rerank failed ({type(exc).__name__}: {exc}); kept retrieval order")
            return pool[:top_n]
        final = scores if self.blend >= 1.0 else blend_scores(scores, [n.score for n in pool], self.blend)
        order = sorted(range(len(pool)), key=lambda i: -final[i] if math.isfinite(final[i]) else math.inf)
        return [annotate_node(pool[i], score=final[i], rerank_score=scores[i], retrieval_score=pool[i].score)
                for i in order[:top_n]]

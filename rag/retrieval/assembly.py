"""Assemble retrieval from config, once: a retriever followed by a list of postprocessors.

``build_retrieval`` wires components around models it is given (the store with its embedders, an
LLM for query transforms and reflection, a cross-encoder); it constructs no model itself. The order:

    [rewrite / HyDE] → vector (+ the second English vectors) + BM25 → fusion → threshold → rerank → MMR → reflection → context fitting

Stages a config turns off are simply not in the list. ``RetrievalChain.run`` is what a llama-index
``RetrieverQueryEngine`` does before synthesis: retrieve, then each postprocessor in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore

from rag.config import RagConfig
from rag.retrieval.expansion import QueryExpansionRetriever
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.postprocessors import (
    ContextBudgetPostprocessor,
    CrossEncoderRerankPostprocessor,
    MMRPostprocessor,
    ReflectionPostprocessor,
    SimilarityThresholdPostprocessor,
    StoredVectors,
)
from rag.retrieval.query import SearchQuery
from rag.retrieval.query_rewrite import QueryEnhancer
from rag.retrieval.retrievers import KeywordRetriever, VectorRetriever
from rag.retrieval.trace import QueryTrace


@dataclass(frozen=True)
class RetrievalChain:
    """A retriever and the postprocessors applied to what it finds, in order."""

    retriever: BaseRetriever
    postprocessors: list[BaseNodePostprocessor] = field(default_factory=list)

    def run(self, query: SearchQuery) -> list[NodeWithScore]:
        nodes = self.retriever.retrieve(query)
        for processor in self.postprocessors:
            nodes = processor.postprocess_nodes(nodes, query_bundle=query)
        return nodes

    @property
    def stage_names(self) -> list[str]:
        return [getattr(p, "stage_name", type(p).__name__) for p in self.postprocessors]


def build_retrieval(config: RagConfig, store: Any, *, llm: Any = None, reranker: Any = None,
                    count_tokens: Callable[[str], int] | None = None,
                    enhancer: QueryEnhancer | None = None) -> RetrievalChain:
    """The retrieval chain ``config`` describes, over ``store``.

    Args:
        config: The settings (retrieval, rerank, MMR, query, reflection, generation budget).
        store: The ``DocumentStore`` (vectors, keywords, router).
        llm: The LLM for rewrite, HyDE and reflection. Defaults to none (those stages say so and pass through).
        reranker: A cross-encoder (``predict(pairs)``). Defaults to none (rerank, when on, says so).
        count_tokens: The answering model's token counter for the context budget. Defaults to word counts.
        enhancer: The query rewriter to share with other chains (its cache too). Defaults to one made
            for ``llm`` from ``config.query``.
    """
    settings = config.retrieval
    candidates = settings.candidate_k
    retrievers: dict[str, BaseRetriever] = {
        "vector": VectorRetriever(store.vectors, store.router, top_k=candidates,
                                  keyword_only=getattr(store, "keyword_only", None)),
    }
    if store.router.second_english_spec():
        retrievers["vector_second"] = VectorRetriever(store.vectors, store.router, top_k=candidates, role="second")
    retrievers["bm25"] = KeywordRetriever(store.keywords, top_k=candidates, phrase_weight=settings.phrase_weight)
    retriever: BaseRetriever = FusionRetriever.from_config(retrievers, settings)
    if enhancer is None and llm is not None:
        enhancer = QueryEnhancer.from_config(llm, config.query)
    if config.query.rewrite or config.query.hyde:
        retriever = QueryExpansionRetriever(retriever, enhancer, rewrite=config.query.rewrite, hyde=config.query.hyde,
                                            variants=config.query.variants, rrf_k=settings.rrf_k, top_k=candidates)
    postprocessors: list[BaseNodePostprocessor] = []
    if settings.similarity_threshold > 0:
        postprocessors.append(SimilarityThresholdPostprocessor(settings.similarity_threshold))
    if config.rerank.enabled:
        top_n = max(config.rerank.top_n, settings.top_k)
        postprocessors.append(CrossEncoderRerankPostprocessor(
            reranker, top_n=top_n, candidates=max(config.rerank.candidates, top_n), blend=config.rerank.blend,
            languages=config.rerank.languages))
    if config.mmr.enabled:
        postprocessors.append(MMRPostprocessor(top_n=settings.top_k, lambda_mult=config.mmr.lambda_mult,
                                               vectors=StoredVectors(store)))
    generation = config.generation
    chunks_of = getattr(store.keywords, "chunks_of", None)
    if generation.broad_context_tokens and chunks_of is not None:
        from rag.retrieval.postprocessors.broad import BroadQuestionPostprocessor
        from rag.retrieval.retrievers import chunk_node

        postprocessors.append(BroadQuestionPostprocessor(chunks_of, chunk_node,
                                                         holder=getattr(store.keywords, "main_holder", None)))
    context = ContextBudgetPostprocessor(settings.top_k, generation.max_context_tokens, count_tokens,
                                         evidence=generation.evidence_fitting,
                                         broad_max_tokens=generation.broad_context_tokens,
                                         idf=getattr(store.keywords, "idf", None))
    if config.reflection.enabled:
        before = RetrievalChain(retriever, list(postprocessors))
        postprocessors.append(ReflectionPostprocessor(
            llm, before.run, context, rewriter=enhancer, min_score=config.reflection.min_score,
            max_rounds=config.reflection.max_rounds, strategy=config.reflection.strategy))
    postprocessors.append(context)
    return RetrievalChain(retriever, postprocessors)


def empty_reason(trace: QueryTrace) -> str:
    """Why a search found nothing, from what its stages recorded."""
    threshold = trace.get("threshold")
    if threshold and threshold.fallback_reason:
        return threshold.fallback_reason
    why = "; ".join(s.fallback_reason for s in trace.stages if s.fallback_reason)
    return "No passage in your documents matches this question." + (f" ({why})" if why else "")

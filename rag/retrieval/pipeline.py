"""The retrieval pipeline: query → (rewrite, HyDE) → vector + BM25 → fusion → threshold → rerank →
MMR → top-k → context budget, with every stage recorded in a ``QueryTrace``.

The pipeline is configured per call (``retrieve(query, config=...)``), so one instance serves the
settings page, the compare page's two settings and the evaluation harness. Models are injected.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.config import RagConfig
from rag.models.embedding_router import model_id_of
from rag.retrieval.fusion import FusionRetriever, carry_max_relevance, reciprocal_rank_fusion
from rag.text.language import count_tokens, detect_language
from rag.retrieval.postprocessors import (
    ContextBudgetPostprocessor,
    CrossEncoderRerankPostprocessor,
    MMRPostprocessor,
    SimilarityThresholdPostprocessor,
)
from rag.retrieval.query_transform import QueryEnhancer
from rag.retrieval.retrievers import KeywordRetriever, QueryEmbeddingCache, VectorRetriever
from rag.index.store import DocumentStore
from rag.retrieval.trace import QueryTrace

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4000
SOURCES = ("vector", "bm25")
VARIANT_WEIGHT = 0.5  # rewritten variants count half as much as the user's own words


class QueryError(ValueError):
    """The query cannot be run as given; the message says why and what to do."""


@dataclass
class RetrievalResult:
    query: str
    nodes: list[NodeWithScore]
    trace: QueryTrace
    empty_reason: str = ""  # why ``nodes`` is empty, when it is
    cached: bool = False
    details: dict[str, Any] = field(default_factory=dict)  # rewrite variants, HyDE passage


class RetrievalPipeline:
    def __init__(self, store: DocumentStore, *, llm: Any = None, reranker: Any = None,
                 query_cache: QueryEmbeddingCache | None = None, result_cache_size: int = 256,
                 count_tokens: Callable[[str], int] | None = None) -> None:
        """``count_tokens`` measures ``generation.max_context_tokens``: pass the answering LLM's own
        tokenizer (``EmbeddedLLM.count_tokens``) so there is one budget in real tokens; defaults to
        ``rag.text.language.count_tokens`` (words, plus one per CJK character)."""
        self.store = store
        self.llm = llm
        self.reranker = reranker
        self.count_tokens = count_tokens
        self.query_cache = query_cache or QueryEmbeddingCache()
        self._enhancers: dict[tuple, QueryEnhancer] = {}
        self._results: OrderedDict[tuple, RetrievalResult] = OrderedDict()
        self._result_cache_size = result_cache_size
        self._lock = threading.Lock()

    def retrieve(self, query: str, config: RagConfig, *, doc_ids: Sequence[str] | None = None,
                 sources: Sequence[str] = SOURCES) -> RetrievalResult:
        """Run the pipeline for one query.

        Args:
            query: The user's question.
            config: The settings to apply (retrieval, rerank, MMR, query enhancement, budget).
            doc_ids: Restrict retrieval to these documents. Defaults to all.
            sources: Which first-stage retrievers run (``vector``, ``bm25``); evaluation uses this to
                measure each alone. Defaults to both (``retrieval.hybrid`` still applies).
        """
        query = validate_query(query)
        doc_filter = self._check_filter(doc_ids)
        key = self._cache_key(query, config, doc_filter) + (tuple(sources),)
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                hit = copy.copy(self._results[key])
                hit.cached = True
                return hit
        result = self._run(query, config, doc_filter, tuple(sources))
        with self._lock:
            self._results[key] = result
            while len(self._results) > self._result_cache_size:
                self._results.popitem(last=False)
        return result

    # -- stages -------------------------------------------------------------------------------

    def _run(self, query: str, config: RagConfig, doc_filter: list[str] | None,
             sources: tuple[str, ...]) -> RetrievalResult:
        trace = QueryTrace(query=query)
        if len(self.store.keywords) == 0:
            return RetrievalResult(query, [], trace, empty_reason="No documents are indexed yet: upload a document first.")
        if doc_filter is not None and not doc_filter:
            return RetrievalResult(query, [], trace, empty_reason="The document filter selects no documents.")
        details: dict[str, Any] = {}
        variants = self._rewrite(query, config, trace, details)
        embedding_strs = self._hyde(query, config, trace, details)

        fusion = self._fusion(config, doc_filter, sources)
        nodes, _ = fusion.retrieve_with_trace(QueryBundle(query, custom_embedding_strs=embedding_strs), trace)
        if len(variants) > 1:
            nodes = self._with_variants(query, nodes, variants[1:], fusion, config, trace)

        retrieval = config.retrieval
        if retrieval.similarity_threshold > 0:
            nodes = self._postprocess("threshold", SimilarityThresholdPostprocessor(retrieval.similarity_threshold),
                                      nodes, query, trace)
        if config.rerank.enabled:
            if self.reranker is None:
                trace.add("rerank", nodes, fallback_reason="rerank is on but no cross-encoder is loaded; skipped")
            elif not reranker_reads(config.rerank.languages, query):
                trace.add("rerank", nodes, fallback_reason=f"the reranker reads {config.rerank.languages} only; "
                          f"skipped for a {detect_language(query)} query")
            else:
                top_n = max(config.rerank.top_n, retrieval.top_k)
                reranker = CrossEncoderRerankPostprocessor(self.reranker, top_n=top_n,
                                                           candidates=max(config.rerank.candidates, top_n),
                                                           blend=config.rerank.blend)
                nodes = self._postprocess("rerank", reranker, nodes, query, trace)
        if config.mmr.enabled and nodes:
            embedder = self._mmr_embedder(query, nodes)
            mmr = MMRPostprocessor(embedder, top_n=retrieval.top_k, lambda_mult=config.mmr.lambda_mult)
            nodes, query_vector = self._with_stored_vectors(query, nodes, embedder)
            nodes = self._postprocess("mmr", mmr, nodes, query, trace, embedding=query_vector)
        nodes = nodes[: retrieval.top_k]
        budget = ContextBudgetPostprocessor(config.generation.max_context_tokens, self.count_tokens or count_tokens)
        top = len(nodes)
        nodes = self._postprocess("final", budget, nodes, query, trace)
        if top:  # say whether top_k or the context budget decided how many passages the LLM sees
            trace.get("final").note(f"{len(nodes)} of the top {top} fit the "
                                    f"{config.generation.max_context_tokens}-token context budget")

        empty_reason = ""
        if not nodes:
            threshold = trace.get("threshold")
            if threshold and threshold.fallback_reason:
                empty_reason = threshold.fallback_reason
            else:  # what the stages could not do often explains the empty result
                why = "; ".join(s.fallback_reason for s in trace.stages if s.fallback_reason)
                empty_reason = "No passage in your documents matches this question." + (f" ({why})" if why else "")
        return RetrievalResult(query, nodes, trace, empty_reason=empty_reason, details=details)

    def _rewrite(self, query: str, config: RagConfig, trace: QueryTrace, details: dict) -> list[str]:
        if not config.query.rewrite:
            return [query]
        with trace.stage("rewrite") as stage:
            if self.llm is None:
                stage.fallback("no LLM available; used the raw query")
                return [query]
            result = self._enhancer(config).rewrite(query)
            if result.fallback_reason:
                stage.fallback(result.fallback_reason)
            variants = list(dict.fromkeys(v for v in result.variants if v.strip()))[: config.query.variants + 1]
            stage.note(f"variants: {variants[1:]}")
            details["rewrite"] = result.to_dict()
            # key concepts and search terms feed BM25 through an extra variant of plain terms
            terms = " ".join([*result.key_concepts, *result.search_terms, *result.synonyms]).strip()
            if terms:
                variants.append(terms)
            return variants

    def _hyde(self, query: str, config: RagConfig, trace: QueryTrace, details: dict) -> list[str] | None:
        if not config.query.hyde:
            return None
        with trace.stage("hyde") as stage:
            if self.llm is None:
                stage.fallback("no LLM available; embedded the raw query")
                return None
            result = self._enhancer(config).hyde(query)
            details["hyde"] = result.to_dict()
            if result.fallback_reason:
                stage.fallback(result.fallback_reason)
                return None
            stage.note(f"hypothetical passage: {result.hypothetical_doc[:200]}")
            return [result.hypothetical_doc, query]  # BM25 keeps the user's words (query_str)

    def _with_variants(self, query: str, nodes: list[NodeWithScore], variants: list[str],
                       fusion: FusionRetriever, config: RagConfig, trace: QueryTrace) -> list[NodeWithScore]:
        lists = [nodes]
        for variant in variants:
            variant_nodes, _ = fusion.retrieve_with_trace(QueryBundle(variant), QueryTrace(query=variant))
            lists.append(variant_nodes)
        fused = carry_max_relevance(
            reciprocal_rank_fusion(lists, k=config.retrieval.rrf_k, weights=[1.0] + [VARIANT_WEIGHT] * len(variants),
                                   top_n=config.retrieval.candidate_k), lists)
        trace.add("fusion", fused, notes=[f"fused the query with {len(variants)} rewritten variants "
                                          f"(variant weight {VARIANT_WEIGHT})"])
        return fused

    def _postprocess(self, name: str, processor: Any, nodes: list[NodeWithScore], query: str,
                     trace: QueryTrace, embedding: list[float] | None = None) -> list[NodeWithScore]:
        with trace.stage(name) as stage:
            try:
                result = processor.postprocess_nodes(nodes, query_bundle=QueryBundle(query, embedding=embedding))
            except Exception as exc:  # a failing optional stage must not sink the query
                logger.warning("stage %s failed: %s", name, exc, exc_info=True)
                stage.error = f"{type(exc).__name__}: {exc}"
                stage.fallback(f"{name} failed; kept the previous ranking")
                result = nodes
            if getattr(processor, "last_reason", ""):
                stage.fallback(processor.last_reason)
            stage.set_candidates(result)
        return result

    # -- helpers ------------------------------------------------------------------------------

    def _fusion(self, config: RagConfig, doc_filter: list[str] | None,
                sources: tuple[str, ...]) -> FusionRetriever:
        k = config.retrieval.candidate_k
        retrievers = {}
        if "vector" in sources:
            retrievers["vector"] = VectorRetriever(self.store.vectors, self.store.router, top_k=k,
                                                   doc_ids=doc_filter, cache=self.query_cache)
        if "bm25" in sources:
            retrievers["bm25"] = KeywordRetriever(self.store.keywords, top_k=k, doc_ids=doc_filter,
                                                  phrase_weight=config.retrieval.phrase_weight)
        if not retrievers:
            raise ValueError(f"sources must name vector and/or bm25, got {sources!r}")
        return FusionRetriever.from_config(retrievers, config.retrieval)

    def _with_stored_vectors(self, query: str, nodes: list[NodeWithScore], embedder: BaseEmbedding,
                             ) -> tuple[list[NodeWithScore], list[float] | None]:
        """Node copies carrying their stored vectors, and the (cached) query vector, for MMR.

        Re-embedding 20-30 candidate texts per query costs ~0.5 s with MiniLM and tens of seconds
        with e5 on 2 cores; the vectors are already in Chroma, one ``get`` away. Any failure leaves
        the nodes as they are (MMR then embeds the texts itself).
        """
        try:
            model_id = model_id_of(embedder)
            query_vector = self.query_cache.get(model_id, query, embedder.get_query_embedding)
            stored = self.store.vectors.get(model_id, [n.node.node_id for n in nodes], with_embeddings=True)
        except Exception as exc:  # degrade: MMR embeds the texts
            logger.info("stored vectors unavailable for MMR (%s); it will embed the texts", exc)
            return nodes, None
        out = []
        for item in nodes:
            vector = stored.get(item.node.node_id, {}).get("embedding")
            out.append(item if vector is None else
                       NodeWithScore(node=item.node.model_copy(update={"embedding": list(vector)}), score=item.score))
        return out, query_vector

    def _mmr_embedder(self, query: str, nodes: list[NodeWithScore]) -> BaseEmbedding:
        chinese = detect_language(query) == "zh" or any(n.node.metadata.get("language") == "zh" for n in nodes)
        return self.store.router.for_language("zh" if chinese else "en")

    def _enhancer(self, config: RagConfig) -> QueryEnhancer:
        key = (config.query.variants, config.query.timeout_s)
        if key not in self._enhancers:
            self._enhancers[key] = QueryEnhancer.from_config(self.llm, config.query)
        return self._enhancers[key]

    def _check_filter(self, doc_ids: Sequence[str] | None) -> list[str] | None:
        if doc_ids is None:
            return None
        known = self.store.completed_ids()
        unknown = sorted(set(doc_ids) - known)
        if unknown:
            raise QueryError(f"unknown or unfinished documents in the filter: {', '.join(unknown)}")
        return sorted(set(doc_ids))

    def _cache_key(self, query: str, config: RagConfig, doc_filter: list[str] | None) -> tuple:
        return (query, tuple(doc_filter) if doc_filter is not None else None, config.retrieval, config.rerank,
                config.mmr, config.query, config.generation.max_context_tokens, config.embedding,
                self.store.version, self.llm is not None, self.reranker is not None)


def reranker_reads(languages: str, query: str) -> bool:
    """Whether a reranker configured for ``languages`` (``all`` or e.g. ``en,zh``) can read ``query``."""
    allowed = {part.strip().lower() for part in languages.split(",") if part.strip()}
    return "all" in allowed or detect_language(query) in allowed


def validate_query(query: str) -> str:
    if query is None or not str(query).strip():
        raise QueryError("The question is empty: type a question about your documents.")
    query = " ".join(str(query).split())
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"The question is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,}. "
                         "Ask about one thing at a time, or quote a shorter passage.")
    return query

"""Query expansion around a retriever: LLM-written search variants (multi-query) and HyDE.

``QueryExpansionRetriever`` is a llama-index retriever wrapping the fusion retriever. With HyDE it
embeds a hypothetical answer passage beside the question (BM25 keeps the user's words); with rewrite
it searches the question and each variant (plus one variant made of the key concepts and search terms)
and fuses the lists by weighted RRF, the user's own words counting double. Both steps are stages of the
query's trace and degrade to the raw question, saying why, when the LLM fails or is absent.
"""

from __future__ import annotations

import logging
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.fusion_scores import carry_max_relevance, reciprocal_rank_fusion
from rag.retrieval.query import SearchQuery, as_search_query, expanded
from rag.retrieval.trace import QueryTrace

logger = logging.getLogger(__name__)

VARIANT_WEIGHT = 0.5  # rewritten variants count half as much as the user's own words


class QueryExpansionRetriever(BaseRetriever):
    """Rewrite and/or HyDE in front of ``retriever``.

    Args:
        retriever: The retriever each variant runs through (the fusion retriever).
        enhancer: The ``QueryEnhancer`` (the one query rewriter), or None when no LLM is loaded.
        rewrite: Search LLM-written variants too. Defaults to False.
        hyde: Embed a hypothetical answer passage beside the question. Defaults to False.
        variants: Variants at most. Defaults to 3.
        rrf_k: The RRF constant for fusing the variants' lists. Defaults to 60.
        top_k: Fused candidates kept (doubled per reflection widening). Defaults to 30.
    """

    def __init__(self, retriever: BaseRetriever, enhancer: Any, *, rewrite: bool = False, hyde: bool = False,
                 variants: int = 3, rrf_k: int = 60, top_k: int = 30) -> None:
        super().__init__()
        self._retriever = retriever
        self._enhancer = enhancer
        self._rewrite = rewrite
        self._hyde = hyde
        self._variants = variants
        self._rrf_k = rrf_k
        self._top_k = top_k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = as_search_query(query_bundle)
        variants = self._rewritten(query) if self._rewrite else []
        embedding_strs = self._hypothetical(query) if self._hyde else None
        nodes = self._retriever.retrieve(query.derive(query.query_str, custom_embedding_strs=embedding_strs))
        if not variants:
            return nodes
        lists = [nodes]
        for variant in variants:  # each variant's own stages are not the user's query: a throwaway trace
            lists.append(self._retriever.retrieve(query.derive(variant, trace=QueryTrace(query=variant))))
        fused = carry_max_relevance(reciprocal_rank_fusion(
            lists, k=self._rrf_k, weights=[1.0] + [VARIANT_WEIGHT] * len(variants),
            top_n=expanded(self._top_k, query.expansion, doubling=True)), lists)
        query.trace.add("fusion", fused, notes=[f"fused the query with {len(variants)} rewritten variants "
                                                f"(variant weight {VARIANT_WEIGHT})"])
        return fused

    def _rewritten(self, query: SearchQuery) -> list[str]:
        """The variants to search besides the question (key concepts and terms as one more, for BM25)."""
        with query.trace.stage("rewrite") as stage:
            if self._enhancer is None:
                stage.fallback("no LLM available; used the raw query")
                return []
            result = self._enhancer.rewrite(query.query_str)
            if result.fallback_reason:
                stage.fallback(result.fallback_reason)
            variants = list(dict.fromkeys(v for v in result.variants[1:] if v.strip()))[: self._variants]
            stage.note(f"variants: {variants}")
            query.trace.details["rewrite"] = result.to_dict()
            terms = " ".join([*result.key_concepts, *result.search_terms, *result.synonyms]).strip()
            return variants + ([terms] if terms else [])

    def _hypothetical(self, query: SearchQuery) -> list[str] | None:
        """``[passage, question]`` to embed, or None (embed the question) when HyDE cannot run."""
        with query.trace.stage("hyde") as stage:
            if self._enhancer is None:
                stage.fallback("no LLM available; embedded the raw query")
                return None
            result = self._enhancer.hyde(query.query_str)
            query.trace.details["hyde"] = result.to_dict()
            if result.fallback_reason:
                stage.fallback(result.fallback_reason)
                return None
            stage.note(f"hypothetical passage: {result.hypothetical_doc[:200]}")
            return [result.hypothetical_doc, query.query_str]

"""``FusionRetriever``: run named sub-retrievers (vector, the second English vectors, BM25) and fuse their lists.

The fusion arithmetic is in ``rag.retrieval.fusion_scores``; this module decides which retrievers run
for a query, degrades when one fails, computes each node's ``relevance`` and traces every step into the
query's own trace.
"""

from __future__ import annotations

import logging
from typing import Any, Literal, Mapping, Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.config import RetrievalConfig
from rag.index.keywords import KEYWORD_FIELDS
from rag.retrieval.adaptive import COVERAGE_BELOW, DENSE_SHIFT, Idf, adapt_weights, lexical_coverage
from rag.retrieval.contents_listings import demote_contents
from rag.retrieval.fusion_scores import (
    Normalizer,
    check_weights,
    normalize_scores,
    reciprocal_rank_fusion,
    weighted_score_fusion,
)
from rag.retrieval.nodes import annotate_node
from rag.retrieval.query import SearchQuery, as_search_query, expanded
from rag.retrieval.table_mentions import lift_tables_asked_for
from rag.retrieval.table_fold import fold_table_parts
from rag.retrieval.table_parts import order_table_parts
from rag.retrieval.table_references import boost_referenced_tables
from rag.retrieval.table_rows import boost_named_rows
from rag.retrieval.trace import QueryTrace, StageTrace
from rag.text.language import count_tokens

logger = logging.getLogger(__name__)


class RetrievalError(RuntimeError):
    """Every sub-retriever failed; the message lists each one's error."""


class FusionRetriever(BaseRetriever):
    """Runs named sub-retrievers (e.g. ``{"vector": ..., "bm25": ...}``) and fuses their results.

    Degradation, each recorded in the trace (``fallback_reason`` of the stage):
        - a sub-retriever that raises is skipped and the others carry on; if all raise,
          ``RetrievalError`` is raised;
        - a query of at most ``short_query_tokens`` tokens (CJK characters count one each) runs only
          the keyword retriever, because one or two words carry too little meaning for an embedding;
          if that retriever fails, the others run instead;
        - keyword hits with score <= 0 (BM25 returns k hits even when no term matched) are dropped.

    Relevance: every returned node gets ``node.metadata["relevance"]`` in [0, 1], the maximum over
    the sub-retrievers that found it of that retriever's score normalised by
    ``relevance_normalization[name]``. By default that is the cosine similarity clipped to [0, 1] for
    ``"vector"`` (``"clip"``; use ``"chroma_cosine"`` if the vector retriever returns llama-index's
    Chroma score ``exp(-distance)``) and the score divided by the list's best score for every other
    source (``"max"``; the top keyword hit gets 1.0). It depends only on the sub-retriever lists, so
    it means the same in ``rrf`` and ``weighted`` mode, unlike ``node.score``, which is the fusion
    score (RRF sums are ~0.03). ``SimilarityThresholdPostprocessor`` filters on it.
    A source named in ``no_relevance`` adds nothing to it: the second English embedder (e5-small) gives
    unrelated text a cosine of about 0.8, so its cosines would lift everything over any threshold.
    ``metadata["retrieval_ranks"]`` maps each source to the node's 1-based rank there.
    Returned nodes are copies; the sub-retrievers' nodes are not mutated.

    Traces: each call appends one stage per sub-retriever (named after it) and a ``fusion`` stage to
    the trace the ``SearchQuery`` carries (a plain ``QueryBundle`` gets a trace of its own).

    Args:
        retrievers: Source name -> retriever, in the order they should run.
        mode: ``"rrf"`` or ``"weighted"``. Defaults to ``"rrf"``.
        weights: Source name -> non-negative weight, used by both modes. Defaults to 1.0 each.
        rrf_k: The RRF constant. Defaults to 60.
        top_k: How many fused nodes to return. Defaults to 30.
        normalization: Score normalisation for ``weighted`` mode. Defaults to ``"minmax"``.
        relevance_normalization: Source name -> normalisation used for ``relevance`` (see above).
        keyword_source: The name of the keyword retriever, or None. Defaults to ``"bm25"``.
        short_query_tokens: Queries with at most this many tokens go keyword-only; 0 disables.
            Defaults to 2.
        coverage_below: Weighted mode: when the top keyword hit holds less than this share of the
            query's IDF-weighted terms, ``dense_shift`` of the (summed-to-1) weight moves to the dense
            sources that found something, in proportion to their weights (``rag.retrieval.adaptive``).
            0 (the default) disables; ``from_config`` turns it on.
        dense_shift: See ``coverage_below``. Defaults to 0.1.
        dense_sources: The dense sources' names. Defaults to ``("vector",)``.
        no_relevance: Sources whose scores do not count towards ``relevance``. Defaults to none.
        idf: token -> IDF for the coverage (``KeywordIndex.idf``). Defaults to equal weights.
        table_row_boost: See ``rag.retrieval.table_rows``. Defaults to 0 (off).
        table_reference_share: See ``rag.retrieval.table_references``. Defaults to 0 (off).
        table_mention_share: See ``rag.retrieval.table_mentions``. Defaults to 0 (off).
        table_fold_tokens: See ``rag.retrieval.table_fold``. Defaults to 0 (off).
        contents_share: See ``rag.retrieval.contents_listings``. Defaults to 1 (off).
    """

    def __init__(self, retrievers: Mapping[str, BaseRetriever], *, mode: Literal["rrf", "weighted"] = "rrf",
                 weights: Mapping[str, float] | None = None, rrf_k: int = 60, top_k: int = 30,
                 normalization: Normalizer = "minmax",
                 relevance_normalization: Mapping[str, Normalizer] | None = None,
                 keyword_source: str | None = "bm25", short_query_tokens: int = 2,
                 coverage_below: float = 0.0, dense_shift: float = DENSE_SHIFT, idf: Idf | None = None,
                 dense_sources: Sequence[str] = ("vector",), no_relevance: Sequence[str] = (),
                 table_row_boost: float = 0.0, table_reference_share: float = 0.0, contents_share: float = 1.0,
                 table_mention_share: float = 0.0, table_fold_tokens: int = 0,
                 callback_manager: CallbackManager | None = None,
                 verbose: bool = False) -> None:
        if not retrievers:
            raise ValueError("FusionRetriever needs at least one sub-retriever")
        if mode not in ("rrf", "weighted"):
            raise ValueError(f"mode must be 'rrf' or 'weighted', got {mode!r}")
        if top_k < 1 or rrf_k < 1 or short_query_tokens < 0:
            raise ValueError("top_k and rrf_k must be >= 1 and short_query_tokens >= 0")
        weights = dict(weights or {})
        unknown = set(weights) - set(retrievers)
        if unknown:
            raise ValueError(f"weights given for unknown sources {sorted(unknown)}; known: {list(retrievers)}")
        self.retrievers = dict(retrievers)
        self.mode = mode
        self.weights = {name: float(weights.get(name, 1.0)) for name in retrievers}
        check_weights(len(self.weights), list(self.weights.values()))
        self.rrf_k = rrf_k
        self.top_k = top_k
        self.normalization = normalization
        self.relevance_normalization = {
            name: (relevance_normalization or {}).get(name, "clip" if name == "vector" else "max")
            for name in retrievers
        }
        self.keyword_source = keyword_source if keyword_source in retrievers else None
        self.short_query_tokens = short_query_tokens
        self.coverage_below, self.dense_shift, self.idf = coverage_below, dense_shift, idf
        self.dense_sources = [name for name in dense_sources if name in self.retrievers]
        self.no_relevance = frozenset(no_relevance)
        self.table_row_boost = table_row_boost
        self.table_reference_share = table_reference_share
        self.contents_share = contents_share
        self.table_mention_share = table_mention_share
        self.table_fold_tokens = table_fold_tokens
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_config(cls, retrievers: Mapping[str, BaseRetriever], config: RetrievalConfig, *,
                    vector_source: str = "vector", second_vector_source: str = "vector_second",
                    keyword_source: str = "bm25", **kwargs: Any) -> FusionRetriever:
        """Build from ``RetrievalConfig`` (sources, mode, rrf_k, candidate_k, weights, short_query_tokens).

        ``config.sources`` "vector" keeps only the dense sources (``vector_source`` and, when given,
        ``second_vector_source``), "keyword" only ``keyword_source``.
        """
        dense = [name for name in (vector_source, second_vector_source) if name in retrievers]
        keep = {"vector": dense, "keyword": [keyword_source]}.get(config.sources)
        if keep is not None and any(name in retrievers for name in keep):
            retrievers = {name: retrievers[name] for name in keep if name in retrievers}
        weights = {vector_source: config.vector_weight, second_vector_source: config.second_vector_weight,
                   keyword_source: config.keyword_weight}
        # query-adaptive weights are on for the weighted mode; the IDF comes from the keyword index
        keywords = getattr(retrievers.get(keyword_source), "keywords", None)
        kwargs.setdefault("coverage_below", COVERAGE_BELOW)
        kwargs.setdefault("idf", getattr(keywords, "idf", None))
        kwargs.setdefault("table_row_boost", config.table_row_boost)
        kwargs.setdefault("table_reference_share", config.table_reference_share)
        kwargs.setdefault("contents_share", config.contents_share)
        kwargs.setdefault("table_mention_share", config.table_mention_share)
        kwargs.setdefault("table_fold_tokens", config.table_fold_tokens)
        kwargs.setdefault("dense_sources", dense)
        kwargs.setdefault("no_relevance", (second_vector_source,))
        return cls(retrievers, mode=config.fusion, rrf_k=config.rrf_k, top_k=config.candidate_k,
                   weights={k: v for k, v in weights.items() if k in retrievers},
                   keyword_source=keyword_source, short_query_tokens=config.short_query_tokens, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query_bundle = as_search_query(query_bundle)
        trace = query_bundle.trace
        query = query_bundle.query_str.strip()
        if not query:
            trace.add("fusion", [], fallback_reason="empty query: nothing retrieved")
            return []

        names = list(self.retrievers)
        reasons: list[str] = []
        tokens = count_tokens(query)
        short = (self.keyword_source is not None and len(names) > 1 and tokens <= self.short_query_tokens)
        if short:
            names = [self.keyword_source]
            reasons.append(f"short query ({tokens} tokens <= {self.short_query_tokens}): keyword only")

        results, failures = self._run(names, query_bundle, trace)
        if short and failures:
            rest = [n for n in self.retrievers if n not in names]
            reasons.append(f"keyword retriever failed on a short query; used {', '.join(rest)}")
            more, more_failures = self._run(rest, query_bundle, trace)
            results.update(more)
            failures.update(more_failures)
        if not results:
            raise RetrievalError("all retrievers failed: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))
        reasons.extend(f"{name} failed ({error}); continued without it" for name, error in failures.items())

        with trace.stage("fusion") as stage:
            for reason in reasons:
                stage.fallback(reason)
            fused = self._fuse(results, stage, expanded(self.top_k, query_bundle.expansion, doubling=True), query)
            stage.set_candidates(fused)
        return fused

    def _run(self, names: Sequence[str], query_bundle: SearchQuery, trace: QueryTrace,
             ) -> tuple[dict[str, list[NodeWithScore]], dict[str, str]]:
        results: dict[str, list[NodeWithScore]] = {}
        failures: dict[str, str] = {}
        for name in names:
            with trace.stage(name) as stage:
                try:
                    hits = list(self.retrievers[name].retrieve(query_bundle))
                except Exception as exc:  # degrade: one broken index must not sink the query
                    logger.warning("retriever %s failed: %s", name, exc, exc_info=True)
                    failures[name] = stage.error = f"{type(exc).__name__}: {exc}"
                    stage.fallback("retriever raised; skipped")
                    continue
                if name == self.keyword_source:
                    kept = [h for h in hits if h.score is None or h.score > 0]
                    if len(kept) < len(hits):
                        stage.note(f"dropped {len(hits) - len(kept)} hits with score <= 0")
                    hits = kept
                stage.set_candidates(hits)
                results[name] = hits
        return results, failures

    def _fuse(self, results: Mapping[str, list[NodeWithScore]], stage: StageTrace, top_k: int,
              query: str = "") -> list[NodeWithScore]:
        names = list(results)
        source_weights = dict(self.weights)
        keyword_hits = results.get(self.keyword_source or "", [])
        dense = [name for name in self.dense_sources if results.get(name)]
        if self.mode == "weighted" and self.coverage_below > 0 and keyword_hits and dense:
            coverage = lexical_coverage(query, _keyword_text(keyword_hits[0]), self.idf)
            # weighed among the lists that found something: an empty list (the second English vectors for
            # a Chinese question) must not dilute the shift
            found = {name: self.weights[name] for name in names if results[name]}
            adapted, note = adapt_weights(found, coverage, dense_sources=dense, keyword_source=self.keyword_source,
                                          below=self.coverage_below, shift=self.dense_shift)
            source_weights.update(adapted)
            if note:
                stage.note(note)
        weights = [source_weights[n] for n in names]
        if sum(weights) <= 0:
            stage.note(f"all surviving sources have weight 0 ({names}); used equal weights")
            weights = [1.0] * len(names)
        lists = [results[n] for n in names]
        if self.mode == "rrf":
            fused = reciprocal_rank_fusion(lists, k=self.rrf_k, weights=weights)
        else:
            fused = weighted_score_fusion(lists, weights=weights, normalization=self.normalization)
        fused = demote_contents(fused, query, self.contents_share, stage)
        fused = lift_tables_asked_for(fused, query, self.table_mention_share, stage)
        # parts first: a row the question names word for word, or a passage naming the table, outweighs them
        fused = order_table_parts(fused, query, stage)
        fused = boost_named_rows(fused, query, self.table_row_boost, stage)
        fused = boost_referenced_tables(fused, self.table_reference_share, stage)
        # last, over every candidate: a part below the cut joins its table before the cut is made
        fused = fold_table_parts(fused, self.table_fold_tokens, stage)[:top_k]
        stage.note(f"mode={self.mode} weights={dict(zip(names, weights))}"
                   + (f" k={self.rrf_k}" if self.mode == "rrf" else f" normalization={self.normalization}"))

        relevance: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        for name, hits in results.items():
            if name in self.no_relevance:
                for rank, hit in enumerate(hits, start=1):
                    ranks.setdefault(hit.node.node_id, {}).setdefault(name, rank)
                continue
            # a vector hit merged from several spaces is scored on its space's scale; relevance is its cosine
            similarities = [h.node.metadata.get("cosine", h.score) for h in hits]
            normalized = normalize_scores(similarities, self.relevance_normalization[name])
            for rank, (hit, value) in enumerate(zip(hits, normalized), start=1):
                node_id = hit.node.node_id
                relevance[node_id] = max(relevance.get(node_id, 0.0), min(max(value, 0.0), 1.0))
                ranks.setdefault(node_id, {}).setdefault(name, rank)
        return [annotate_node(item, relevance=relevance.get(item.node.node_id, 0.0),
                              retrieval_ranks=ranks.get(item.node.node_id, {})) for item in fused]


def _keyword_text(hit: NodeWithScore) -> str:
    """What BM25 matched in a hit, as ``rag.index.keywords.keyword_text`` built it, from the hit's metadata."""
    metadata = hit.node.metadata
    fields = (str(metadata.get(name) or "") for name in KEYWORD_FIELDS)
    return " ".join(part for part in (*fields, hit.node.get_content()) if part)

"""Fusing ranked lists from several retrievers (dense, BM25, query variants) into one.

Two fusion functions work on plain ``list[NodeWithScore]`` inputs:

- ``reciprocal_rank_fusion``: ``score(d) = sum_i w_i / (k + rank_i(d))``, ranks 1-based. Only ranks
  matter, so lists on different score scales fuse without calibration.
- ``weighted_score_fusion``: ``score(d) = sum_i w_i * norm_i(d)``, where ``norm_i`` rescales list i's
  scores to [0, 1] (min-max by default) and a node missing from list i contributes 0.

Both de-duplicate by ``node.node_id`` (the first node object seen is kept), skip lists whose weight
is 0 (so weights ``[1, 0]`` return exactly the first list's order), and break score ties by the best
rank the node reached, then by the order nodes were first seen.

``FusionRetriever`` runs named sub-retrievers and fuses them, with degradation and stage traces.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Callable, Literal, Mapping, Sequence, Union

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from rag.config import RetrievalConfig
from rag.retrieval.adaptive import COVERAGE_BELOW, DENSE_SHIFT, Idf, adapt_weights, lexical_coverage
from rag.text.language import count_tokens
from rag.retrieval.trace import QueryTrace, StageTrace

logger = logging.getLogger(__name__)

Normalization = Literal["minmax", "max", "clip", "chroma_cosine", "none"]
Normalizer = Union[str, Callable[[Sequence[Union[float, None]]], Sequence[float]]]

# Metadata keys this package writes at query time. They are hidden from the embedder and the LLM.
RUNTIME_METADATA_KEYS = ("relevance", "retrieval_ranks", "retrieval_score", "rerank_score", "mmr_score",
                         "truncated")


class RetrievalError(RuntimeError):
    """Every sub-retriever failed; the message lists each one's error."""


def annotate_node(item: NodeWithScore, *, score: float | None | Any = ..., **metadata: Any) -> NodeWithScore:
    """A copy of ``item`` with ``metadata`` merged in (input nodes are never mutated).

    The new keys are added to the node's excluded embed/LLM metadata keys, so a ``relevance: 0.8``
    never leaks into the text a cross-encoder scores or the LLM reads.

    Args:
        item: The node to copy.
        score: The new score. Defaults to keeping ``item.score``.
        **metadata: Keys to set.
    """
    node = item.node
    keys = list(metadata)
    copy = node.model_copy(update={
        "metadata": {**node.metadata, **metadata},
        "excluded_embed_metadata_keys": list(dict.fromkeys([*node.excluded_embed_metadata_keys, *keys])),
        "excluded_llm_metadata_keys": list(dict.fromkeys([*node.excluded_llm_metadata_keys, *keys])),
    })
    return NodeWithScore(node=copy, score=item.score if score is ... else score)


def normalize_scores(scores: Sequence[float | None], method: Normalizer = "minmax") -> list[float]:
    """Rescale one list's scores to [0, 1].

    Methods:
        ``minmax``: ``(s - min) / (max - min)``. A degenerate list (one element, or all scores equal)
            maps every element to 1.0 when the score is > 0 and to 0.0 otherwise: each is as good as
            the list's best, and a list of zero BM25 scores stays at zero.
        ``max``: ``s / max`` (negatives clip to 0); keeps ratios, the top hit gets 1.0. All-zero -> 0.
        ``clip``: ``s`` clipped to [0, 1]; for scores that already are cosine similarities.
        ``chroma_cosine``: ``1 + ln(s)`` clipped to [0, 1]; undoes llama-index's Chroma score
            ``exp(-distance)`` for a collection in cosine space, giving back the cosine similarity.
        ``none``: raw scores (not bounded); only for fusion experiments.
        A callable: called with the raw scores, must return one float per score.

    ``None`` scores normalise to 0.0 (and are ignored when finding min/max).
    """
    if callable(method):
        values = [float(v) for v in method(scores)]
        if len(values) != len(scores):
            raise ValueError("a normalizer callable must return one value per score")
        return values
    present = [float(s) for s in scores if s is not None and math.isfinite(float(s))]
    out: list[float] = []
    for raw in scores:
        if raw is None or not math.isfinite(float(raw)):
            out.append(0.0)
            continue
        s = float(raw)
        if method == "minmax":
            low, high = min(present), max(present)
            out.append((s - low) / (high - low) if high > low else (1.0 if s > 0 else 0.0))
        elif method == "max":
            high = max(present)
            out.append(max(s, 0.0) / high if high > 0 else 0.0)
        elif method == "clip":
            out.append(min(max(s, 0.0), 1.0))
        elif method == "chroma_cosine":
            out.append(min(max(1.0 + math.log(s), 0.0), 1.0) if s > 0 else 0.0)
        elif method == "none":
            out.append(s)
        else:
            raise ValueError(f"unknown normalization {method!r}; use minmax, max, clip, chroma_cosine or none")
    return out


def reciprocal_rank_fusion(result_lists: Sequence[Sequence[NodeWithScore]], k: int = 60,
                           weights: Sequence[float] | None = None, top_n: int | None = None,
                           ) -> list[NodeWithScore]:
    """Weighted reciprocal rank fusion: ``score(d) = sum_i weights[i] / (k + rank_i(d))``.

    Args:
        result_lists: Ranked lists, best first. A node repeated inside one list counts once, at its
            best rank.
        k: The RRF constant; larger values flatten the rank discount. Defaults to 60.
        weights: One non-negative weight per list. Defaults to 1.0 each (textbook RRF).
        top_n: Keep only the best ``top_n``. Defaults to all.

    Returns:
        New ``NodeWithScore`` objects (sharing the input nodes) scored by fused RRF, best first.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    weights = _check_weights(len(result_lists), weights)
    contributions = []
    for hits, weight in zip(result_lists, weights):
        if weight > 0:
            contributions.append({node_id: weight / (k + rank) for node_id, rank in _ranks(hits).items()})
    return _combine(result_lists, weights, contributions, top_n)


def weighted_score_fusion(result_lists: Sequence[Sequence[NodeWithScore]],
                          weights: Sequence[float] | None = None, normalization: Normalizer = "minmax",
                          top_n: int | None = None) -> list[NodeWithScore]:
    """Convex-combination fusion of per-list normalised scores: ``sum_i weights[i] * norm_i(d)``.

    Args:
        result_lists: Ranked lists with scores. Within one list a repeated node keeps its best score.
        weights: One non-negative weight per list. Defaults to 1.0 each.
        normalization: How each list is rescaled before weighting; see ``normalize_scores``.
            Defaults to ``"minmax"`` (a one-element or all-equal list maps to 1.0, or 0.0 if its
            score is <= 0).
        top_n: Keep only the best ``top_n``. Defaults to all.

    Returns:
        New ``NodeWithScore`` objects scored by the weighted sum, best first.
    """
    weights = _check_weights(len(result_lists), weights)
    contributions = []
    for hits, weight in zip(result_lists, weights):
        if weight <= 0:
            continue
        normalized = normalize_scores([h.score for h in hits], normalization)
        per_node: dict[str, float] = {}
        for hit, value in zip(hits, normalized):
            node_id = hit.node.node_id
            per_node[node_id] = max(per_node.get(node_id, -math.inf), weight * value)
        contributions.append(per_node)
    return _combine(result_lists, weights, contributions, top_n)


def carry_max_relevance(fused: Sequence[NodeWithScore], result_lists: Sequence[Sequence[NodeWithScore]],
                        key: str = "relevance") -> list[NodeWithScore]:
    """Copies of ``fused`` whose ``metadata[key]`` is the maximum over every list the node is in.

    For fusing already-fused lists (e.g. ``FusionRetriever`` results for several query variants):
    the fusion functions keep the first node object seen, so without this a node keeps the
    relevance of whichever list happened to come first.
    """
    best: dict[str, float] = {}
    for hits in result_lists:
        for hit in hits:
            value = hit.node.metadata.get(key)
            if value is not None:
                node_id = hit.node.node_id
                best[node_id] = max(best.get(node_id, -math.inf), float(value))
    return [annotate_node(item, **{key: best[item.node.node_id]}) if item.node.node_id in best else item
            for item in fused]


def _check_weights(count: int, weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * count
    weights = [float(w) for w in weights]
    if len(weights) != count:
        raise ValueError(f"got {len(weights)} weights for {count} result lists")
    if any(w < 0 or not math.isfinite(w) for w in weights):
        raise ValueError(f"weights must be finite and >= 0, got {weights}")
    if count and sum(weights) <= 0:
        raise ValueError("at least one weight must be > 0")
    return weights


def _ranks(hits: Sequence[NodeWithScore]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, hit in enumerate(hits, start=1):
        ranks.setdefault(hit.node.node_id, rank)
    return ranks


def _combine(result_lists: Sequence[Sequence[NodeWithScore]], weights: Sequence[float],
             contributions: Sequence[Mapping[str, float]], top_n: int | None) -> list[NodeWithScore]:
    nodes: dict[str, NodeWithScore] = {}
    best_rank: dict[str, int] = {}
    for hits, weight in zip(result_lists, weights):
        if weight <= 0:
            continue
        for rank, hit in enumerate(hits, start=1):
            node_id = hit.node.node_id
            nodes.setdefault(node_id, hit)
            best_rank[node_id] = min(best_rank.get(node_id, rank), rank)
    totals = {node_id: sum(c.get(node_id, 0.0) for c in contributions) for node_id in nodes}
    order = {node_id: i for i, node_id in enumerate(nodes)}
    ranked = sorted(nodes, key=lambda n: (-totals[n], best_rank[n], order[n]))
    if top_n is not None:
        ranked = ranked[:top_n]
    return [NodeWithScore(node=nodes[n].node, score=totals[n]) for n in ranked]


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
    ``metadata["retrieval_ranks"]`` maps each source to the node's 1-based rank there.
    Returned nodes are copies; the sub-retrievers' nodes are not mutated.

    Traces: ``retrieve_with_trace(query, trace)`` appends one stage per sub-retriever (named after
    it) and a ``fusion`` stage. Plain ``retrieve()`` also works; its trace is then kept per thread in
    ``last_trace``.

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
            query's IDF-weighted terms, ``dense_shift`` of the weight moves to ``"vector"`` for that
            query (``rag.retrieval.adaptive``). 0 (the default) disables; ``from_config`` turns it on.
        dense_shift: See ``coverage_below``. Defaults to 0.1.
        idf: token -> IDF for the coverage (``KeywordIndex.idf``). Defaults to equal weights.
    """

    def __init__(self, retrievers: Mapping[str, BaseRetriever], *, mode: Literal["rrf", "weighted"] = "rrf",
                 weights: Mapping[str, float] | None = None, rrf_k: int = 60, top_k: int = 30,
                 normalization: Normalizer = "minmax",
                 relevance_normalization: Mapping[str, Normalizer] | None = None,
                 keyword_source: str | None = "bm25", short_query_tokens: int = 2,
                 coverage_below: float = 0.0, dense_shift: float = DENSE_SHIFT, idf: Idf | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
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
        _check_weights(len(self.weights), list(self.weights.values()))
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
        self._local = threading.local()
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_config(cls, retrievers: Mapping[str, BaseRetriever], config: RetrievalConfig, *,
                    vector_source: str = "vector", keyword_source: str = "bm25",
                    **kwargs: Any) -> FusionRetriever:
        """Build from ``RetrievalConfig`` (mode, rrf_k, candidate_k, weights, short_query_tokens).

        With ``config.hybrid`` False only ``vector_source`` is kept.
        """
        if not config.hybrid and vector_source in retrievers:
            retrievers = {vector_source: retrievers[vector_source]}
        weights = {vector_source: config.vector_weight, keyword_source: config.keyword_weight}
        # query-adaptive weights are on for the weighted mode; the IDF comes from the keyword index
        keywords = getattr(retrievers.get(keyword_source), "_keywords", None)
        kwargs.setdefault("coverage_below", COVERAGE_BELOW)
        kwargs.setdefault("idf", getattr(keywords, "idf", None))
        return cls(retrievers, mode=config.fusion, rrf_k=config.rrf_k, top_k=config.candidate_k,
                   weights={k: v for k, v in weights.items() if k in retrievers},
                   keyword_source=keyword_source, short_query_tokens=config.short_query_tokens, **kwargs)

    @property
    def last_trace(self) -> QueryTrace | None:
        """The trace of this thread's latest ``retrieve`` call."""
        return getattr(self._local, "last", None)

    def retrieve_with_trace(self, query: QueryType, trace: QueryTrace | None = None,
                            ) -> tuple[list[NodeWithScore], QueryTrace]:
        """``retrieve(query)``, appending stages to ``trace`` (a new one if None); returns both."""
        bundle = QueryBundle(query) if isinstance(query, str) else query
        trace = trace if trace is not None else QueryTrace(query=bundle.query_str)
        self._local.pending = trace
        try:
            nodes = self.retrieve(bundle)
        finally:
            self._local.pending = None
        return nodes, trace

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        trace = getattr(self._local, "pending", None) or QueryTrace(query=query_bundle.query_str)
        self._local.last = trace
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
            fused = self._fuse(results, stage, query)
            stage.set_candidates(fused)
        return fused

    def _run(self, names: Sequence[str], query_bundle: QueryBundle, trace: QueryTrace,
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
                for note in getattr(self.retrievers[name], "notes", ()):
                    stage.fallback(note)
                stage.set_candidates(hits)
                results[name] = hits
        return results, failures

    def _fuse(self, results: Mapping[str, list[NodeWithScore]], stage: StageTrace,
              query: str = "") -> list[NodeWithScore]:
        names = list(results)
        source_weights = self.weights
        keyword_hits = results.get(self.keyword_source or "", [])
        if self.mode == "weighted" and self.coverage_below > 0 and keyword_hits and "vector" in results:
            coverage = lexical_coverage(query, _keyword_text(keyword_hits[0]), self.idf)
            source_weights, note = adapt_weights(self.weights, coverage, vector_source="vector",
                                                 keyword_source=self.keyword_source, below=self.coverage_below,
                                                 shift=self.dense_shift)
            if note:
                stage.note(note)
        weights = [source_weights[n] for n in names]
        if sum(weights) <= 0:
            stage.note(f"all surviving sources have weight 0 ({names}); used equal weights")
            weights = [1.0] * len(names)
        lists = [results[n] for n in names]
        if self.mode == "rrf":
            fused = reciprocal_rank_fusion(lists, k=self.rrf_k, weights=weights, top_n=self.top_k)
        else:
            fused = weighted_score_fusion(lists, weights=weights, normalization=self.normalization,
                                          top_n=self.top_k)
        stage.note(f"mode={self.mode} weights={dict(zip(names, weights))}"
                   + (f" k={self.rrf_k}" if self.mode == "rrf" else f" normalization={self.normalization}"))

        relevance: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        for name, hits in results.items():
            normalized = normalize_scores([h.score for h in hits], self.relevance_normalization[name])
            for rank, (hit, value) in enumerate(zip(hits, normalized), start=1):
                node_id = hit.node.node_id
                relevance[node_id] = max(relevance.get(node_id, 0.0), min(max(value, 0.0), 1.0))
                ranks.setdefault(node_id, {}).setdefault(name, rank)
        return [annotate_node(item, relevance=relevance.get(item.node.node_id, 0.0),
                              retrieval_ranks=ranks.get(item.node.node_id, {})) for item in fused]


def _keyword_text(hit: NodeWithScore) -> str:
    """What BM25 matched in a hit: its heading path and text (``rag.index.keywords.keyword_text``)."""
    return " ".join(p for p in (str(hit.node.metadata.get("heading_path") or ""), hit.node.get_content()) if p)

"""Fusing ranked lists from several retrievers (dense, BM25, query variants) into one.

Two fusion functions work on plain ``list[NodeWithScore]`` inputs:

- ``reciprocal_rank_fusion``: ``score(d) = sum_i w_i / (k + rank_i(d))``, ranks 1-based. Only ranks
  matter, so lists on different score scales fuse without calibration.
- ``weighted_score_fusion``: ``score(d) = sum_i w_i * norm_i(d)``, where ``norm_i`` rescales list i's
  scores to [0, 1] (min-max by default) and a node missing from list i contributes 0.

Both de-duplicate by ``node.node_id`` (the first node object seen is kept), skip lists whose weight
is 0 (so weights ``[1, 0]`` return exactly the first list's order), and break score ties by the best
rank the node reached, then by the order nodes were first seen.
"""

from __future__ import annotations

import math
from typing import Callable, Literal, Mapping, Sequence, Union

from llama_index.core.schema import NodeWithScore

from rag.retrieval.nodes import annotate_node

Normalization = Literal["minmax", "max", "clip", "chroma_cosine", "none"]
Normalizer = Union[str, Callable[[Sequence[Union[float, None]]], Sequence[float]]]


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
    weights = check_weights(len(result_lists), weights)
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
    weights = check_weights(len(result_lists), weights)
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


def check_weights(count: int, weights: Sequence[float] | None) -> list[float]:
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

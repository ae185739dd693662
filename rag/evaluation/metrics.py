"""Retrieval metrics (nDCG, recall, MRR, precision at k) and latency percentiles.

Conventions follow trec_eval / pytrec_eval, which BEIR uses, so numbers compare with published ones:
- nDCG uses linear gain ``rel / log2(rank + 1)`` with graded relevance, and the ideal DCG of the
  best ``k`` judged documents;
- recall@k divides by the number of relevant documents, precision@k by ``k`` (even when fewer
  than k documents were retrieved);
- a document is relevant when its qrel grade is > 0;
- a ranked list is de-duplicated first (keep the first occurrence), because chunk-level results
  mapped to document ids repeat documents;
- ``aggregate`` averages over queries that have at least one relevant document; a query with no
  run scores 0.

A run is ``qid -> ranked doc ids`` (best first) or ``qid -> {doc_id: score}``.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence, Union

import numpy as np

Ranking = Union[Sequence[str], Mapping[str, float]]
Qrel = Mapping[str, int]

DEFAULT_KS: dict[str, tuple[int, ...]] = {"ndcg": (10,), "recall": (1, 5, 10, 20), "mrr": (10,), "p": (5,)}


def ranked_ids(ranking: Ranking) -> list[str]:
    """Doc ids best first, duplicates removed; a ``{doc: score}`` mapping is sorted by score (desc)."""
    if isinstance(ranking, Mapping):
        ids: Iterable[str] = (doc for doc, _ in sorted(ranking.items(), key=lambda kv: -kv[1]))
    else:
        ids = ranking
    return list(dict.fromkeys(ids))


def ndcg_at_k(ranking: Ranking, qrel: Qrel, k: int) -> float:
    """nDCG@k with linear gain; 0.0 when the query has no relevant document."""
    _check_k(k)
    ideal = sorted((g for g in qrel.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        return 0.0
    dcg = sum(max(qrel.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranked_ids(ranking)[:k]))
    return dcg / idcg


def recall_at_k(ranking: Ranking, qrel: Qrel, k: int) -> float:
    """Share of the relevant documents found in the top k; 0.0 when there are none."""
    _check_k(k)
    relevant = {doc for doc, g in qrel.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked_ids(ranking)[:k])) / len(relevant)


def precision_at_k(ranking: Ranking, qrel: Qrel, k: int) -> float:
    """Relevant documents in the top k, divided by k."""
    _check_k(k)
    return sum(1 for doc in ranked_ids(ranking)[:k] if qrel.get(doc, 0) > 0) / k


def mrr_at_k(ranking: Ranking, qrel: Qrel, k: int) -> float:
    """1 / rank of the first relevant document within the top k, else 0."""
    _check_k(k)
    for rank, doc in enumerate(ranked_ids(ranking)[:k], start=1):
        if qrel.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


METRICS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k, "p": precision_at_k}


def per_query(runs: Mapping[str, Ranking], qrels: Mapping[str, Qrel],
              ks: Mapping[str, Sequence[int]] = DEFAULT_KS) -> dict[str, dict[str, float]]:
    """``qid -> {"ndcg@10": ..., ...}`` for every query with at least one relevant document."""
    unknown = set(ks) - set(METRICS)
    if unknown:
        raise ValueError(f"unknown metrics {sorted(unknown)}; known: {sorted(METRICS)}")
    scores: dict[str, dict[str, float]] = {}
    for qid, qrel in qrels.items():
        if not any(g > 0 for g in qrel.values()):
            continue
        ranking = runs.get(qid, [])
        scores[qid] = {f"{name}@{k}": METRICS[name](ranking, qrel, k) for name, values in ks.items() for k in values}
    return scores


def aggregate(runs: Mapping[str, Ranking], qrels: Mapping[str, Qrel],
              ks: Mapping[str, Sequence[int]] = DEFAULT_KS) -> dict[str, float]:
    """Mean of each metric over the judged queries.

    With the default ``ks`` the keys are ``ndcg@10, recall@1, recall@5, recall@10, recall@20,
    mrr@10, p@5``. All are 0.0 when no query has a relevant document.

    Args:
        runs: qid -> ranked doc ids (or ``{doc_id: score}``).
        qrels: qid -> {doc_id: grade}.
        ks: metric name (``ndcg``, ``recall``, ``mrr``, ``p``) -> cut-offs. Defaults to ``DEFAULT_KS``.
    """
    scores = per_query(runs, qrels, ks)
    keys = [f"{name}@{k}" for name, values in ks.items() for k in values]
    if not scores:
        return {key: 0.0 for key in keys}
    return {key: float(np.mean([s[key] for s in scores.values()])) for key in keys}


def latency_percentiles(latencies_ms: Sequence[float]) -> dict[str, float]:
    """``{"p50", "p95", "p99"}`` by numpy's linear interpolation; NaN for an empty sample."""
    if len(latencies_ms) == 0:
        return {"p50": math.nan, "p95": math.nan, "p99": math.nan}
    values = np.percentile(np.asarray(latencies_ms, dtype=float), [50, 95, 99], method="linear")
    return {"p50": float(values[0]), "p95": float(values[1]), "p99": float(values[2])}


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError("k must be >= 1")

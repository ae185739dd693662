from __future__ import annotations

import math

import pytest

from rag.evaluation.metrics import (aggregate, latency_percentiles, mrr_at_k, ndcg_at_k, per_query, precision_at_k,
                              ranked_ids, recall_at_k)

RANKING = ["d1", "d2", "d3", "d4"]
QREL = {"d1": 0, "d2": 2, "d4": 1, "d5": 1}  # d1 judged non-relevant, d5 never retrieved


def test_ndcg_matches_hand_computation() -> None:
    # DCG@10 = 2/log2(3) + 1/log2(5) = 1.26186 + 0.43068; IDCG = 2/1 + 1/log2(3) + 1/log2(4) = 3.13093
    assert ndcg_at_k(RANKING, QREL, 10) == pytest.approx((2 / math.log2(3) + 1 / math.log2(5))
                                                         / (2 + 1 / math.log2(3) + 0.5))
    assert ndcg_at_k(RANKING, QREL, 10) == pytest.approx(0.54059, abs=1e-5)
    assert ndcg_at_k(RANKING, QREL, 3) == pytest.approx(0.40303, abs=1e-5)
    assert ndcg_at_k(["d2", "d4", "d5"], QREL, 10) == pytest.approx(1.0)


def test_recall_precision_mrr_hand_examples() -> None:
    assert recall_at_k(RANKING, QREL, 1) == 0.0
    assert recall_at_k(RANKING, QREL, 10) == pytest.approx(2 / 3)
    assert precision_at_k(RANKING, QREL, 5) == pytest.approx(2 / 5)  # divides by k, not by retrieved
    assert precision_at_k(RANKING, QREL, 2) == pytest.approx(1 / 2)
    assert mrr_at_k(RANKING, QREL, 10) == 0.5
    assert mrr_at_k(RANKING, QREL, 1) == 0.0


def test_duplicates_count_once_and_score_maps_are_sorted() -> None:
    assert ranked_ids(["d2", "d2", "d4"]) == ["d2", "d4"]
    assert ranked_ids({"a": 0.1, "b": 0.9, "c": 0.5}) == ["b", "c", "a"]
    assert precision_at_k(["d2", "d2", "d2"], QREL, 2) == 0.5
    assert recall_at_k({"d4": 3.0, "x": 1.0}, QREL, 1) == pytest.approx(1 / 3)


def test_no_relevant_documents() -> None:
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0.0
    assert recall_at_k(["a"], {}, 10) == 0.0
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], {"a": 1}, 0)


def test_aggregate_means_over_judged_queries() -> None:
    runs = {"q1": RANKING, "q2": ["x"], "q3": ["z"]}
    qrels = {"q1": QREL, "q2": {"x": 1}, "q3": {"z": 0}, "q4": {"y": 1}}  # q3 unjudged, q4 has no run

    metrics = aggregate(runs, qrels)

    assert list(metrics) == ["ndcg@10", "recall@1", "recall@5", "recall@10", "recall@20", "mrr@10", "p@5"]
    assert metrics["ndcg@10"] == pytest.approx((0.540593 + 1 + 0) / 3, abs=1e-5)
    assert metrics["recall@1"] == pytest.approx(1 / 3)
    assert metrics["recall@5"] == pytest.approx((2 / 3 + 1) / 3)
    assert metrics["recall@20"] == pytest.approx((2 / 3 + 1) / 3)
    assert metrics["mrr@10"] == pytest.approx(0.5)
    assert metrics["p@5"] == pytest.approx((0.4 + 0.2) / 3)
    assert set(per_query(runs, qrels)) == {"q1", "q2", "q4"}


def test_aggregate_custom_ks_and_empty() -> None:
    assert aggregate({"q": ["a"]}, {"q": {"a": 1}}, ks={"ndcg": (1, 3)}) == {"ndcg@1": 1.0, "ndcg@3": 1.0}
    assert aggregate({}, {})["ndcg@10"] == 0.0
    with pytest.raises(ValueError):
        aggregate({}, {}, ks={"map": (10,)})


def test_latency_percentiles_linear() -> None:
    result = latency_percentiles([100, 10, 30, 20, 40])

    # sorted 10 20 30 40 100; p95 at index 3.8 -> 40 + 0.8 * 60
    assert result == pytest.approx({"p50": 30.0, "p95": 88.0, "p99": 97.6})
    assert math.isnan(latency_percentiles([])["p50"])
    assert latency_percentiles([5.0]) == {"p50": 5.0, "p95": 5.0, "p99": 5.0}

"""Three-list fusion (BM25 + two dense lists), the simplex grid and the paired bootstrap of the lab experiment."""

from __future__ import annotations

import random

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from rag.lab import tune_ensemble
from rag.lab.ensemble import EnsembleSetting, fuse3, merge_dense
from rag.lab.paired_bootstrap import paired_bootstrap
from rag.lab.tune_ensemble import simplex
from rag.lab.tune_fusion import FusionSetting, fuse
from rag.retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion

BM25 = [("a", 10.0), ("b", 6.0), ("c", 2.0)]
DENSE_A = [("b", 0.9), ("d", 0.7), ("a", 0.5)]
DENSE_B = [("d", 0.8), ("c", 0.6), ("b", 0.4)]


def test_weighted_three_lists_by_hand() -> None:
    # min-max: bm25 a 1, b 0.5, c 0; A b 1, d 0.5, a 0; B d 1, c 0.5, b 0
    # weights 0.5 / 0.3 / 0.2: a 0.5, b 0.25+0.3=0.55, c 0.1, d 0.15+0.2=0.35
    setting = EnsembleSetting("weighted", (0.5, 0.3, 0.2))

    assert fuse3(BM25, DENSE_A, DENSE_B, setting) == ["b", "a", "d", "c"]


def test_rrf_three_lists_by_hand() -> None:
    # k 10, weights 0.2 / 0.4 / 0.4: d 0.4/12 + 0.4/11 = 0.0697, b 0.2/12 + 0.4/11 + 0.4/13 = 0.0838,
    # a 0.2/11 + 0.4/13 = 0.0489, c 0.2/13 + 0.4/12 = 0.0487
    setting = EnsembleSetting("rrf", (0.2, 0.4, 0.4), rrf_k=10)

    assert fuse3(BM25, DENSE_A, DENSE_B, setting) == ["b", "d", "a", "c"]


def test_adaptive_rule_moves_bm25_weight_to_both_dense_lists_in_proportion() -> None:
    setting = EnsembleSetting("weighted", (0.7, 0.2, 0.1), coverage_below=0.5, dense_shift=0.3)

    assert setting.weights_for(0.7) == (0.7, 0.2, 0.1)
    assert setting.weights_for(None) == (0.7, 0.2, 0.1)
    assert setting.weights_for(0.3) == pytest.approx((0.4, 0.4, 0.2))
    # fixed: a 0.7 x 1 = 0.7 leads b 0.7 x 0.5 + 0.2 = 0.55; weak lexical evidence: a 0.4 < b 0.2 + 0.4
    assert fuse3(BM25, DENSE_A, DENSE_B, setting, coverage=0.7)[0] == "a"
    assert fuse3(BM25, DENSE_A, DENSE_B, setting, coverage=0.3)[0] == "b"


def test_a_zero_weight_list_reduces_to_the_two_way_replay() -> None:
    rng = random.Random(3)
    ids = [f"d{i}" for i in range(40)]
    two_way = FusionSetting("weighted", 0.4, candidate_k=20, coverage_below=0.5, weak_lexical_weight=0.5)
    three_way = EnsembleSetting("weighted", (0.6, 0.4, 0.0), candidate_k=20, coverage_below=0.5, dense_shift=0.1)
    for _ in range(30):
        dense = sorted(((d, rng.uniform(0.1, 0.9)) for d in rng.sample(ids, 30)), key=lambda h: -h[1])
        other = sorted(((d, rng.uniform(0.1, 0.9)) for d in rng.sample(ids, 30)), key=lambda h: -h[1])
        bm25 = sorted(((d, rng.uniform(0.0, 12)) for d in rng.sample(ids, 30)), key=lambda h: -h[1])
        coverage = rng.random()
        assert fuse3(bm25, dense, other, three_way, coverage=coverage) == fuse(dense, bm25, two_way, coverage=coverage)


@pytest.mark.parametrize("mode,normalization", [("weighted", "minmax"), ("weighted", "max"), ("rrf", "minmax")])
def test_three_way_matches_the_library_fusion(mode: str, normalization: str) -> None:
    rng = random.Random(11)
    ids = [f"d{i}" for i in range(50)]
    for _ in range(30):
        lists = [sorted(((d, rng.uniform(0.05, 9)) for d in rng.sample(ids, 25)), key=lambda h: -h[1]) for _ in range(3)]
        weights = (0.5, 0.3, 0.2)
        setting = EnsembleSetting(mode, weights, normalization=normalization, candidate_k=20, rrf_k=10)
        cut = [lists[1][:20], lists[2][:20], lists[0][:20]]  # the replay's order: dense A, dense B, BM25
        nodes = [[NodeWithScore(node=TextNode(id_=d, text=""), score=s) for d, s in hits] for hits in cut]
        library_weights = [weights[1], weights[2], weights[0]]
        if mode == "rrf":
            expected = reciprocal_rank_fusion(nodes, k=10, weights=library_weights, top_n=20)
        else:
            expected = weighted_score_fusion(nodes, weights=library_weights, normalization=normalization, top_n=20)
        assert fuse3(lists[0], lists[1], lists[2], setting) == [n.node.node_id for n in expected]


def test_dense_first_merges_the_dense_lists_then_fuses_with_bm25() -> None:
    # merged (0.5 / 0.5 min-max): b 0.5, d 0.25+0.5=0.75, a 0, c 0.25 -> d 1, b 0.667, c 0.333, a 0 after min-max
    merged = merge_dense(DENSE_A, DENSE_B, 0.5, "minmax", 10)
    assert [d for d, _ in merged] == ["d", "b", "c", "a"]
    assert [s for _, s in merged] == pytest.approx([0.75, 0.5, 0.25, 0.0])
    # then 0.5 x merged + 0.5 x bm25 (a 1, b 0.5, c 0): b 0.583, d 0.5, a 0.5, c 0.167; d and a tie on
    # score and best rank (1), and the dense list is read first, as FusionRetriever reads it
    setting = EnsembleSetting("dense-first", (0.5, 0.25, 0.25))
    assert fuse3(BM25, DENSE_A, DENSE_B, setting) == ["b", "d", "a", "c"]
    # with BM25 leading (0.7), a's keyword score wins
    assert fuse3(BM25, DENSE_A, DENSE_B, EnsembleSetting("dense-first", (0.7, 0.15, 0.15)))[:2] == ["a", "b"]


def test_short_queries_stay_keyword_only_and_zero_bm25_hits_are_no_match() -> None:
    setting = EnsembleSetting("weighted", (0.2, 0.4, 0.4))

    assert fuse3(BM25 + [("z", 0.0)], DENSE_A, DENSE_B, setting, short=True) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="mode"):
        fuse3(BM25, DENSE_A, DENSE_B, EnsembleSetting("max-pool"))


def test_simplex_holds_every_triple_once_and_each_sums_to_one() -> None:
    points = simplex(0.05)

    assert len(points) == 231 == len(set(points))
    assert all(abs(sum(p) - 1) < 1e-9 and min(p) >= 0 for p in points)
    assert (1.0, 0.0, 0.0) in points and (0.55, 0.2, 0.25) in points


def test_paired_bootstrap_interval() -> None:
    better = {f"q{i}": 0.6 for i in range(200)}
    worse = {f"q{i}": 0.5 for i in range(200)}
    noisy = {f"q{i}": 0.5 + (0.3 if i % 2 else -0.3) for i in range(200)}

    lift = paired_bootstrap(better, worse, resamples=200, seed=1)
    assert lift.mean == pytest.approx(0.1) and lift.low == pytest.approx(0.1) and lift.share_above_zero == 1.0
    none = paired_bootstrap(noisy, worse, resamples=500, seed=1)
    assert none.low < 0 < none.high and none.questions == 200
    assert paired_bootstrap(noisy, worse, resamples=500, seed=1) == none  # the seed fixes the draw
    with pytest.raises(ValueError, match="share no"):
        paired_bootstrap({"a": 1.0}, {"b": 1.0})


def test_report_splits_are_refused() -> None:
    with pytest.raises(SystemExit):
        tune_ensemble.main(["--dataset", "scifact", "--split", "test"])
    with pytest.raises(SystemExit):
        tune_ensemble.main(["--dataset", "squad", "--split", "report"])

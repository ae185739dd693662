"""Reranker training data: a reproducible train/held-out split and hard-negative groups; the test split is refused."""

from __future__ import annotations

from rag.evaluation.datasets import EvalDataset
from rag.lab.train_data import split_queries, training_groups
from rag.lab.train_reranker import choose_blend, main


def test_split_is_reproducible_disjoint_and_sized() -> None:
    qids = [f"q{i}" for i in range(50)]
    train, held = split_queries(qids, 0.2, seed=0)
    assert (train, held) == split_queries(list(reversed(qids)), 0.2, seed=0)
    assert len(held) == 10 and not set(train) & set(held) and set(train) | set(held) == set(qids)
    assert split_queries(qids, 0.2, seed=1)[1] != held


def test_groups_pair_each_relevant_document_with_non_relevant_candidates() -> None:
    dataset = EvalDataset(name="t", corpus={"a": {"title": "A", "text": "alpha"}, "b": {"title": "", "text": "beta"},
                                             "c": {"title": "", "text": "gamma"}},
                          queries={"q": "question"}, qrels={"q": {"a": 1, "b": 1}})
    candidates = {"q": [("b", "beta", 0.9), ("c", "gamma", 0.5), ("x", "noise", 0.1)]}
    groups = training_groups(dataset, candidates, negatives=2, seed=0)
    assert [g.positive for g in groups] == ["A\nalpha", "beta"]  # title + text, every relevant doc
    assert all(set(g.negatives) == {"gamma", "noise"} for g in groups)  # never a relevant doc as negative
    assert all(g.query == "question" for g in groups)


def test_blend_is_chosen_on_held_out_queries() -> None:
    dataset = EvalDataset(name="t", corpus={}, queries={"q": "question"}, qrels={"q": {"good": 1}})

    class Knows:
        def predict(self, pairs):
            return [1.0 if text == "right" else 0.0 for _, text in pairs]

    best, table = choose_blend(dataset, {"q": [("bad", "wrong", 1.0), ("good", "right", 0.0)]}, Knows(), 20)
    assert table[1.0] == 1.0 and table[0.0] < 1.0 and best >= 0.6


def test_training_on_the_test_split_is_refused(capsys) -> None:
    assert main(["--split", "test"]) == 2
    assert "test split" in capsys.readouterr().err


def test_a_query_without_non_relevant_hits_is_kept_only_when_asked() -> None:
    dataset = EvalDataset(name="t", corpus={"a": {"title": "", "text": "alpha"}}, queries={"q": "question"},
                          qrels={"q": {"a": 1}})
    assert training_groups(dataset, {"q": [("a", "alpha", 1.0)]}, negatives=2, seed=0) == []
    kept = training_groups(dataset, {"q": [("a", "alpha", 1.0)]}, negatives=2, seed=0, require_negatives=False)
    assert [(g.positive, g.negatives) for g in kept] == [("alpha", ())]

"""The lab's fast fusion replay ranks exactly as rag.retrieval.fusion does, and guards report splits."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from rag.evaluation.datasets import EvalDataset
from rag.lab import tune_fusion
from rag.lab.tune_fusion import FusionSetting, fuse, replay
from rag.retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion


def _lists(rng: random.Random, docs: int = 40, depth: int = 35) -> tuple[list, list]:
    ids = [f"d{i}" for i in range(docs)]
    vector = sorted(((d, rng.uniform(0.2, 0.9)) for d in rng.sample(ids, depth)), key=lambda h: -h[1])
    bm25 = sorted(((d, rng.choice([rng.uniform(0.5, 20), 3.0])) for d in rng.sample(ids, depth)), key=lambda h: -h[1])
    return vector, bm25


def _nodes(hits):
    return [NodeWithScore(node=TextNode(id_=d, text=""), score=s) for d, s in hits]


@pytest.mark.parametrize("setting", [FusionSetting("weighted", 0.45), FusionSetting("weighted", 0.7, normalization="max"),
                                     FusionSetting("rrf", 0.3, rrf_k=10), FusionSetting("weighted", 0.6, candidate_k=20)],
                         ids=["minmax", "max", "rrf", "shallow"])
def test_replay_matches_the_library_fusion(setting: FusionSetting) -> None:
    rng = random.Random(7)
    for _ in range(50):
        vector, bm25 = _lists(rng)
        k = setting.candidate_k
        lists = [_nodes(vector[:k]), _nodes(bm25[:k])]
        weights = [setting.vector_weight, 1 - setting.vector_weight]
        if setting.mode == "rrf":
            expected = reciprocal_rank_fusion(lists, k=setting.rrf_k, weights=weights, top_n=k)
        else:
            expected = weighted_score_fusion(lists, weights=weights, normalization=setting.normalization, top_n=k)
        assert fuse(vector, bm25, setting) == [n.node.node_id for n in expected]


def test_single_lists_and_short_queries() -> None:
    vector, bm25 = [("a", 0.9), ("b", 0.8)], [("b", 5.0), ("c", 2.0), ("z", 0.0)]

    assert fuse(vector, bm25, FusionSetting("vector")) == ["a", "b"]
    assert fuse(vector, bm25, FusionSetting("bm25")) == ["b", "c"]  # a zero BM25 score is no match
    assert fuse(vector, bm25, FusionSetting("weighted", 0.9), short=True) == ["b", "c"]  # keyword-only, as the app


def test_replay_scores_each_question_against_its_qrels() -> None:
    dataset = EvalDataset(name="t", corpus={}, queries={"q1": "what makes aspirin work", "q2": "fever in adults"},
                          qrels={"q1": {"a": 1}, "q2": {"c": 1}})
    vector = {"q1": [("a", 0.9), ("b", 0.5)], "q2": [("b", 0.9), ("c", 0.1)]}
    bm25 = {"q1": [("b", 3.0)], "q2": [("c", 4.0)]}

    assert replay(dataset, vector, bm25, FusionSetting("vector"))["recall@1"] == 0.5
    assert replay(dataset, vector, bm25, FusionSetting("weighted", 0.5))["mrr@10"] == 0.75


def test_choosing_on_a_report_split_is_refused() -> None:
    with pytest.raises(SystemExit):
        tune_fusion.main(["--dataset", "squad", "--split", "report"])
    with pytest.raises(SystemExit):
        tune_fusion.main(["--dataset", "scifact", "--split", "test"])


def _row(dataset: str, mode: str, metric: float, *, v: float = 0.5, depth: int = 30, split: str = "tune") -> dict:
    key = "ndcg@10" if dataset == "scifact" else "mrr@10"
    return {"dataset": dataset, "split": split, "k1": 0.7, "b": 0.75, "phrase_weight": 0.5, "mode": mode,
            "vector_weight": v, "rrf_k": 60, "normalization": "minmax", "candidate_k": depth, key: metric}


def test_the_chosen_default_is_never_below_the_best_single_retriever_on_any_set() -> None:
    from rag.lab.choose_defaults import choose

    rows = [_row("scifact", "vector", 0.70), _row("scifact", "bm25", 0.68), _row("squad", "vector", 0.72),
            _row("squad", "bm25", 0.85),
            # best mean, but below BM25 alone on SQuAD: not eligible
            _row("scifact", "weighted", 0.80, v=0.8), _row("squad", "weighted", 0.84, v=0.8),
            _row("scifact", "weighted", 0.74, v=0.4, depth=50), _row("squad", "weighted", 0.88, v=0.4, depth=50),
            # tied within 0.002 on the mean and shallower: chosen
            _row("scifact", "weighted", 0.739, v=0.45), _row("squad", "weighted", 0.879, v=0.45)]

    ranked = choose(rows)

    assert ranked[0]["chosen"] and (ranked[0]["vector_weight"], ranked[0]["candidate_k"]) == (0.45, 30)
    assert ranked[0]["margins"] == {"scifact": 0.039, "squad": 0.029}
    assert not next(c for c in ranked if c["vector_weight"] == 0.8)["eligible"]


def test_rows_from_a_report_split_are_refused(tmp_path: Path) -> None:
    import json

    from rag.lab.choose_defaults import load_rows

    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(_row("squad", "bm25", 0.9, split="report")) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="report split"):
        load_rows([path])


def test_the_bm25_replay_scores_as_the_keyword_index_does(tmp_path: Path) -> None:
    from rag.evaluation.retrieval import corpus_chunk
    from rag.index.keywords import KeywordIndex
    from rag.lab.replay import BM25Replay, BM25Setting

    corpus = {"a": {"title": "Ibuprofen", "text": "The maximum daily dose of ibuprofen for adults is 1200 mg."},
              "b": {"title": "Weather", "text": "Sunny weather and a light breeze in the afternoon."},
              "c": {"title": "Dose", "text": "Dose adjustments for adults with kidney disease; ibuprofen dose."},
              "d": {"title": "布洛芬", "text": "布洛芬每日最大剂量为1200毫克。"}}
    queries = {"q1": "maximum ibuprofen dose for adults", "q2": "布洛芬的最大劑量"}
    dataset = EvalDataset(name="t", corpus=corpus, queries=queries, qrels={"q1": {"a": 1}, "q2": {"d": 1}})
    index = KeywordIndex(tmp_path / "bm25")
    index.add_many({doc_id: [corpus_chunk(doc_id, entry)] for doc_id, entry in corpus.items()})
    replay = BM25Replay(dataset)

    lists = replay.lists(BM25Setting(k1=0.5, b=0.75, phrase_weight=0.5), depth=10)

    for qid, text in queries.items():
        expected = [(h.doc_id, h.score) for h in index.search(text, k=10, phrase_weight=0.5)]
        assert [d for d, _ in lists[qid]] == [d for d, _ in expected]
        assert [s for _, s in lists[qid]] == pytest.approx([s for _, s in expected])
    assert replay.coverage("q1", "a") == 1.0 and replay.coverage("q1", "b") == 0.0
    assert 0 < replay.coverage("q1", "c") < 1

"""Bi-encoder fine-tuning: batches without false in-batch negatives, the contrastive loss, BM25 mining."""

from __future__ import annotations

import math
import random

import torch

from rag.evaluation.datasets import EvalDataset
from rag.lab.train_embedder import batches, contrastive_loss, interpolate_weights, keyword_candidates, main
from rag.lab.train_data import TrainingGroup


def _group(query: str, positive: str) -> TrainingGroup:
    return TrainingGroup(query, positive, ("negative",))


def test_no_batch_holds_one_query_twice_and_every_group_is_used_once() -> None:
    # q0 has three judged abstracts: together in a batch, each would be a false negative of the others
    groups = [_group("q0", f"p{i}") for i in range(3)] + [_group(f"q{i}", f"p{i}") for i in range(1, 8)]
    result = batches(groups, 4, random.Random(0))
    assert all(len(b) <= 4 and len({g.query for g in b}) == len(b) for b in result)
    assert sorted(g.positive for b in result for g in b) == sorted(g.positive for g in groups)


def test_contrastive_loss_rewards_each_query_matching_its_own_document() -> None:
    vectors = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
    aligned = contrastive_loss(vectors, vectors, scale=20.0)
    shuffled = contrastive_loss(vectors, vectors.roll(1, dims=0), scale=20.0)
    assert aligned < shuffled
    same = torch.ones(4, 8) / math.sqrt(8)
    assert math.isclose(contrastive_loss(same, same, scale=20.0).item(), math.log(4), rel_tol=1e-5)
    # hard negatives are extra columns: the positive is still column i
    with_negatives = contrastive_loss(vectors[:3], torch.cat([vectors[:3], vectors[3:]]), scale=20.0)
    assert with_negatives.item() < contrastive_loss(vectors[:3], torch.cat([vectors[3:], vectors[:3]]), 20.0).item()


def test_keyword_mining_ranks_by_bm25_and_returns_title_and_text() -> None:
    dataset = EvalDataset(
        name="t",
        corpus={"a": {"title": "Aspirin", "text": "Aspirin lowers the risk of stroke."},
                "b": {"title": "Statins", "text": "Statins lower cholesterol in adults."},
                "c": {"title": "Sleep", "text": "Sleep improves memory."}},
        queries={"q": "aspirin stroke risk", "r": "cholesterol statins"}, qrels={})
    lists = keyword_candidates(dataset, ["q", "r"], depth=5)
    assert lists["q"][0][:2] == ("a", "Aspirin\nAspirin lowers the risk of stroke.")
    assert lists["r"][0][0] == "b" and "c" not in [d for d, _, _ in lists["r"]]  # no shared word, no hit


def test_training_on_the_test_split_is_refused(capsys) -> None:
    assert main(["--split", "test"]) == 2
    assert "test split" in capsys.readouterr().err


def test_interpolation_averages_float_weights_and_keeps_integer_buffers() -> None:
    tuned = {"w": torch.tensor([1.0, 3.0]), "position_ids": torch.tensor([0, 1])}
    original = {"w": torch.tensor([3.0, 5.0]), "position_ids": torch.tensor([0, 1])}
    mixed = interpolate_weights(tuned, original, 0.25)
    assert torch.equal(mixed["w"], torch.tensor([2.5, 4.5])) and mixed["position_ids"].dtype == torch.long
    assert torch.equal(interpolate_weights(tuned, original, 1.0)["w"], tuned["w"])


def test_an_interpolation_share_outside_zero_to_one_is_refused(capsys) -> None:
    assert main(["--interpolate", "0"]) == 2
    assert "--interpolate" in capsys.readouterr().err

"""Tuning the gate, the verifier and the confidence check together by replaying recorded rows of several runs."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from rag.config import RagConfig
from rag.lab.trust_signals import auc, file_weights, verification_holds
from rag.lab.trust_tuning import Replay, load_rows, run, tune


def _row(unanswerable: bool, p_yes: float, coverage: float, claim_p: float, anchor: float, right: bool,
         confidence: float = 0.9, noise: float = 0.5) -> dict:
    return {"unanswerable": unanswerable, "refused_by": "", "abstained": False, "error": "", "right": right,
            "answerability": {"p_yes": p_yes, "coverage": coverage},
            "confidence": {"mean_p": confidence, "min_p": noise, "first_p": noise},
            "verification": [{"check": "", "supported": True, "anchor": anchor, "p_yes": claim_p}]}


def _write(tmp_path: Path, name: str, rows: list[dict]) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"dataset": name, "split": "tune", "backends": {"embedded:x": {"rows": rows}}}))
    return path


def _planted(rng: random.Random, n: int) -> list[dict]:
    """Answerable rows sure of their first phrase, unanswerable ones unsure; every other signal is noise."""
    def one(unanswerable: bool) -> dict:
        confidence = rng.uniform(0.15, 0.35) if unanswerable else rng.uniform(0.75, 0.95)
        return _row(unanswerable, rng.random(), rng.random(), rng.random(), rng.uniform(0.3, 1.0), not unanswerable,
                    confidence, noise=rng.random())
    return [one(False) for _ in range(n)] + [one(True) for _ in range(n)]


def test_replay_applies_anchor_and_claim_threshold_and_ignores_a_confidence_note() -> None:
    row = _row(True, 0.9, 0.9, 0.3, 0.4, False)
    assert verification_holds(row, 0.0, 0.0)
    assert not verification_holds(row, 0.5, 0.0)  # the cited source misses the question's words
    assert not verification_holds(row, 0.0, 0.5)  # the model's claim check says no
    content = dict(row, verification=[{"check": "content", "supported": False, "anchor": None, "p_yes": None}])
    assert not verification_holds(content, 0.0, 0.0)
    refused = dict(row, abstained=True, refused_by="confidence",
                   verification=[{"check": "confidence", "supported": False}])
    assert verification_holds(refused, 0.0, 0.0)  # a looser confidence threshold would have shown it


def test_pooled_tuning_finds_the_planted_signal_and_ignores_the_useless_ones(tmp_path: Path) -> None:
    rng = random.Random(0)
    sets = [load_rows(_write(tmp_path, name, _planted(rng, 15))) for name in ("a", "b")]
    result = tune(sets, 0.85)
    chosen = result["chosen"]
    assert result["reached_target"] and chosen["abstention"] == 1.0 and chosen["false_abstention"] == 0.0
    assert chosen["confidence_signal"] == "mean_p" and 0.35 <= chosen["confidence_min"] <= 0.75
    assert chosen["verify_threshold"] == 0.0 and chosen["answered_and_right"] == 1.0
    for name in ("a (tune)", "b (tune)", "pooled"):
        aucs = result["auc"][name]
        assert aucs["confidence_mean_p"] == 1.0
        assert 0.2 < aucs["confidence_first_p"] < 0.8 and 0.2 < aucs["claim_p_yes"] < 0.8
    assert result["per_file"]["a (tune)"]["abstention"] == 1.0


def test_without_a_signal_the_confidence_check_stays_off(tmp_path: Path) -> None:
    rng = random.Random(1)
    rows = [_row(u, rng.random(), rng.random(), 0.9, 0.9, not u, confidence=rng.random(), noise=rng.random())
            for u in [False] * 20 + [True] * 20]
    result = tune([("noise", rows)], 0.99)
    assert 0.25 < result["auc"]["noise"]["confidence_mean_p"] < 0.75
    # no threshold reaches the target without refusing answerable questions as often: the best trade-off is
    # not a confidence threshold that only removes rows at random
    assert result["chosen"]["abstention"] - result["chosen"]["false_abstention"] <= 0.35


def test_each_file_and_class_weighs_the_same() -> None:
    small = [_row(False, 0.9, 0.9, 0.9, 0.9, True)] * 2 + [_row(True, 0.1, 0.1, 0.9, 0.9, False)] * 2
    large = [_row(False, 0.9, 0.9, 0.9, 0.9, True)] * 30 + [_row(True, 0.1, 0.1, 0.9, 0.9, False)] * 10
    weights = file_weights([("s", small), ("l", large)])
    assert np.isclose(weights[:2].sum(), weights[4:34].sum()) and np.isclose(weights[34:].sum(), weights[2:4].sum())
    replay = Replay([("s", small), ("l", large)], (1.0, 0.0))
    shown = np.array([True] * 4 + [True] * 30 + [False] * 10)  # every unanswerable of the large file refused
    assert replay.score(shown)["abstention"] == 0.5  # mean of 0.0 (small) and 1.0 (large), not 10/12


def test_auc_leaves_out_rows_without_a_value() -> None:
    assert auc([0.9, None, 0.1], [True, True, False]) == 1.0
    assert auc([None, 0.1], [True, False]) is None


def test_replay_prints_the_curve_of_given_values_and_chooses_nothing(tmp_path: Path, capsys) -> None:
    path = _write(tmp_path, "report", _planted(random.Random(2), 10))
    args = argparse.Namespace(rows=[path], target=0.85, json=True,
                              replay=["0.5", "0.5", "-0.2", "0.0", "0.0", "mean_p:0.5"])
    assert run(args, RagConfig()) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["replay"] and result["chosen"]["confidence_min"] == 0.5 and result["chosen"]["bias"] == -0.2
    assert result["curve"] and {p["anchor_min"] for p in result["curve"]} == {0.0}

"""Tuning the gate and the verifier together by replaying recorded rows."""

from __future__ import annotations

from rag.lab.trust_tuning import replay, tune


def _row(unanswerable: bool, p_yes: float, coverage: float, claim_p: float, anchor: float, right: bool) -> dict:
    return {"unanswerable": unanswerable, "refused_by": "", "abstained": False, "error": "", "right": right,
            "answerability": {"p_yes": p_yes, "coverage": coverage},
            "verification": [{"check": "", "supported": True, "anchor": anchor, "p_yes": claim_p}]}


def test_replay_applies_gate_anchor_and_claim_threshold_in_turn() -> None:
    row = _row(True, 0.9, 0.9, 0.3, 0.4, False)
    assert replay(row, (0.5, 0.5), -0.5, 0.0, 0.0)
    assert not replay(row, (0.5, 0.5), -0.95, 0.0, 0.0)  # the gate refuses
    assert not replay(row, (0.5, 0.5), -0.5, 0.5, 0.0)  # the cited source misses the question's words
    assert not replay(row, (0.5, 0.5), -0.5, 0.0, 0.5)  # the model's claim check says no
    content = dict(row, verification=[{"check": "content", "supported": False, "anchor": None, "p_yes": None}])
    assert not replay(content, (0.5, 0.5), -0.5, 0.0, 0.0)


def test_tune_reaches_the_target_when_a_signal_separates_and_prints_the_curve() -> None:
    answerable = [_row(False, 0.8, 0.9, 0.9, 0.8, True) for _ in range(10)]
    # unanswerables the gate cannot tell apart, but whose claims the model rejects
    impossible = [_row(True, 0.8, 0.9, 0.2, 0.8, False) for _ in range(10)]
    result = tune(answerable + impossible, 0.85)
    chosen = result["chosen"]
    assert result["reached_target"] and chosen["abstention"] == 1.0 and chosen["false_abstention"] == 0.0
    assert 0.2 < chosen["verify_threshold"] <= 0.9 and chosen["answered_and_right"] == 1.0
    assert result["curve"] and all(p["abstention"] <= 1.0 for p in result["curve"])

"""Fitting the answerability gate from (P(yes), coverage) rows."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from rag.answer.gate import Gate
from rag.lab.gate_calibration import auc, fit


def _rows(seed: int = 0) -> list[dict]:
    """Answerable questions have higher coverage and slightly higher P(yes), with overlap, as measured."""
    rng = random.Random(seed)
    rows = []
    for answerable in [True] * 60 + [False] * 60:
        rows.append({"answerable": answerable, "p_yes": rng.gauss(0.36 if answerable else 0.30, 0.05),
                     "coverage": rng.gauss(0.75 if answerable else 0.45, 0.15)})
    return rows


def test_auc_is_the_chance_an_answerable_question_ranks_above_a_left_out_one() -> None:
    labels = np.array([1, 1, 0, 0])
    assert auc(np.array([0.9, 0.8, 0.1, 0.2]), labels) == 1.0
    assert auc(np.array([0.1, 0.2, 0.9, 0.8]), labels) == 0.0
    assert auc(np.array([0.5, 0.5, 0.5, 0.5]), labels) == 0.5


def test_fit_refuses_the_target_share_and_combines_both_signals() -> None:
    report = fit(_rows(), target=0.85)
    assert report["abstention"] == pytest.approx(0.85, abs=1 / 60)
    gate = Gate(**report["gate"])
    assert gate.w_yes > 0 and gate.w_coverage > 0
    assert report["auc"]["gate"] >= max(report["auc"]["p_yes"], report["auc"]["coverage"]) - 0.01
    assert report["false_abstention"] < 0.5
    # the gate is what decide() applies: the refusal share it reports is the share below zero
    left_out = [r for r in _rows() if not r["answerable"]]
    refused = sum(gate.score(r["p_yes"], r["coverage"]) < 0 for r in left_out) / len(left_out)
    assert refused == pytest.approx(report["abstention"])


def test_fit_needs_both_kinds_of_question() -> None:
    with pytest.raises(ValueError, match="both answerable and left-out"):
        fit([r for r in _rows() if r["answerable"]], target=0.85)


def test_coverage_only_gate_is_a_threshold_on_coverage() -> None:
    report = fit(_rows(), target=0.85, coverage_only=True)
    gate = Gate(**report["gate"])
    assert gate.w_yes == 0.0 and gate.w_coverage == 1.0
    assert report["abstention"] == pytest.approx(0.85, abs=1 / 60)
    assert gate.score(0.99, -gate.bias - 0.01) < 0 <= gate.score(0.0, -gate.bias + 0.01)  # P(yes) is ignored


def test_cli_refits_from_saved_rows_and_names_a_missing_dataset(tmp_path, capsys) -> None:
    from rag.lab.cli import main

    saved = tmp_path / "rows.json"
    saved.write_text(json.dumps({"dataset": "squad", "model": "m", "seed": 1, "rows": _rows()}))
    assert main(["calibrate-gate", "--from-rows", str(saved), "--coverage-only", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gate"]["w_yes"] == 0.0 and report["model"] == "m" and report["abstention"] >= 0.8
    assert main(["calibrate-gate", "--dataset", str(tmp_path / "missing.json")]) == 2
    assert "missing.json not found" in capsys.readouterr().err

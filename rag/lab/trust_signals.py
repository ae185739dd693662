"""The signals ``tune-trust`` reads from recorded ``eval-answers`` rows, how much each separates, and the pooled fit.

Every function takes rows as ``eval-answers --rows`` writes them: ``answerability`` (the gate's P(yes) and
coverage), ``confidence`` (the answer's first-phrase probabilities, ``rag.answer.confidence``) and
``verification`` (per claim: which check decided, the anchor share, the LLM's P(yes)).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from rag.answer.confidence import SIGNALS
from rag.lab.gate_calibration import auc as pair_auc


def coverage_of(row: dict[str, Any]) -> float:
    """The gate's coverage (a question without search terms counts as covered, as the gate does)."""
    value = (row.get("answerability") or {}).get("coverage")
    return 1.0 if value is None else float(value)


def confidence_of(row: dict[str, Any], signal: str) -> float | None:
    """The row's first-phrase ``signal`` (mean_p, min_p, first_p); None when no answer was generated."""
    value = (row.get("confidence") or {}).get(signal)
    return None if value is None else float(value)


def claim_p_yes(row: dict[str, Any]) -> float | None:
    """The best P(yes) the LLM gave any of the row's claims; None when none was asked."""
    values = [c["p_yes"] for c in row.get("verification") or [] if c.get("p_yes") is not None]
    return max(values) if values else None


def verification_holds(row: dict[str, Any], anchor_min: float, verify_threshold: float) -> bool:
    """Whether the recorded claims would leave the answer shown under these verifier thresholds."""
    checks = [c for c in row.get("verification") or [] if c.get("check") != "confidence"]
    if not checks:
        return not row["abstained"] or row.get("refused_by") in ("gate", "confidence")

    def holds(check: dict[str, Any]) -> bool:
        if check["check"] in ("content", "uncited"):
            return False
        if check.get("anchor") is not None and check["anchor"] < anchor_min:
            return False
        return check.get("p_yes") is None or check["p_yes"] >= verify_threshold

    return any(holds(c) for c in checks)


def file_weights(sets: Sequence[tuple[str, list[dict[str, Any]]]]) -> np.ndarray:
    """A weight per row (files in order) so each file, and within it each class, sums to the same weight."""
    weights = []
    for _, rows in sets:
        impossible = sum(1 for r in rows if r["unanswerable"])
        counts = {True: impossible, False: len(rows) - impossible}
        weights += [1.0 / (2 * len(sets) * counts[bool(r["unanswerable"])]) for r in rows]
    return np.array(weights, dtype=float)


def gate_direction(rows: Sequence[dict[str, Any]], weights: np.ndarray | None = None) -> tuple[float, float]:
    """(w_yes, w_coverage) of a logistic regression on (P(yes), coverage), scaled to |w| sums of 1.

    Args:
        rows: The rows (those without a P(yes) are left out).
        weights: A weight per row (``file_weights``). Defaults to class-balanced weights.
    """
    from sklearn.linear_model import LogisticRegression

    keep = [i for i, r in enumerate(rows) if (r.get("answerability") or {}).get("p_yes") is not None]
    x = np.array([[rows[i]["answerability"]["p_yes"], coverage_of(rows[i])] for i in keep], dtype=float)
    y = np.array([not rows[i]["unanswerable"] for i in keep], dtype=int)
    if len(set(y.tolist())) < 2:
        return 0.0, 1.0
    if weights is None:
        model = LogisticRegression(class_weight="balanced").fit(x, y)
    else:
        sample = weights[keep]
        model = LogisticRegression().fit(x, y, sample_weight=sample / sample.mean())
    w_yes, w_coverage = (float(v) for v in model.coef_[0])
    scale = abs(w_yes) + abs(w_coverage) or 1.0
    return w_yes / scale, w_coverage / scale


def auc(values: Sequence[float | None], answerable: Sequence[bool]) -> float | None:
    """P(a random answerable row scores above a random unanswerable one), ties half; rows without a value are
    left out; None when a class has none."""
    known = [(v, a) for v, a in zip(values, answerable) if v is not None]
    labels = np.array([int(a) for _, a in known], dtype=int)
    if len(set(labels.tolist())) < 2:
        return None
    return pair_auc(np.array([v for v, _ in known], dtype=float), labels)


def signal_aucs(sets: Sequence[tuple[str, list[dict[str, Any]]]], w: tuple[float, float]) -> dict[str, dict[str, Any]]:
    """Per file (and pooled, when there are several) the AUC of every signal and of the fitted gate's score."""
    groups = list(sets) + ([("pooled", [r for _, rs in sets for r in rs])] if len(sets) > 1 else [])
    out = {}
    for name, rows in groups:
        answerable = [not r["unanswerable"] for r in rows]
        p_yes = [(r.get("answerability") or {}).get("p_yes") for r in rows]
        columns: dict[str, list[float | None]] = {
            "p_yes": p_yes, "coverage": [coverage_of(r) for r in rows],
            **{f"confidence_{s}": [confidence_of(r, s) for r in rows] for s in SIGNALS},
            "claim_p_yes": [claim_p_yes(r) for r in rows],
            "gate": [None if p is None else w[0] * p + w[1] * coverage_of(r) for p, r in zip(p_yes, rows)]}
        out[name] = {k: auc(v, answerable) for k, v in columns.items()}
        out[name]["n"] = f"{sum(answerable)}+{len(rows) - sum(answerable)}"
    return out

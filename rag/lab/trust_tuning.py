"""``python -m rag.lab tune-trust``: fit the answerability gate and the claim verifier's thresholds together.

Input: the rows of an ``eval-answers --split tune --rows FILE`` run made with the gate and the verifier
only recording (``generation.answer_check_calibrated=false``, ``answer_check_threshold=0``,
``verify_threshold=0``, ``verify_anchor_min=0``): every question then carries P(yes) and coverage, and
every claim its anchor share and the LLM's P(yes). Decisions are replayed offline:

    abstain = no sources or gate(P(yes), coverage) < 0 or the model said "not found"
              or every claim fails (content check, anchor < anchor_min, claim P(yes) < verify_threshold)

The gate's direction is a class-balanced logistic regression on (P(yes), coverage) (as
``calibrate-gate``); its offset, ``verify_anchor_min`` and ``verify_threshold`` are chosen on a grid: the
setting with abstention >= ``--target`` that answers most answerable questions right, else the one with
the highest abstention minus false abstention. Every grid point is printed as the curve (abstention
against false abstention), so where the model, not the method, is the limit shows. Report the chosen
setting with ``eval-answers --split report``, never on these rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag.config import RagConfig

OFFSETS = 24
ANCHORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
VERIFY = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("tune-trust", help="fit the gate and the verifier's thresholds on tune rows")
    parser.add_argument("rows", type=Path, help="an eval-answers --split tune --rows FILE report")
    parser.add_argument("--target", type=float, default=0.85, help="abstention on unanswerables to reach")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, config: RagConfig) -> int:
    report = json.loads(args.rows.read_text(encoding="utf-8"))
    backend = next(iter(report["backends"].values()))
    result = tune(backend["rows"], args.target)
    result.update({"dataset": report.get("dataset"), "split": report.get("split")})
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_result(result))
    return 0


def gate_direction(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """(w_yes, w_coverage) of a class-balanced logistic regression, scaled to |w| sums of 1."""
    from sklearn.linear_model import LogisticRegression

    usable = [r for r in rows if (r.get("answerability") or {}).get("p_yes") is not None]
    x = np.array([[r["answerability"]["p_yes"], _coverage(r)] for r in usable], dtype=float)
    y = np.array([not r["unanswerable"] for r in usable], dtype=int)
    if len(set(y.tolist())) < 2:
        return 0.0, 1.0
    w_yes, w_coverage = (float(v) for v in LogisticRegression(class_weight="balanced").fit(x, y).coef_[0])
    scale = abs(w_yes) + abs(w_coverage) or 1.0
    return w_yes / scale, w_coverage / scale


def _coverage(row: dict[str, Any]) -> float:
    value = (row.get("answerability") or {}).get("coverage")
    return 1.0 if value is None else float(value)


def replay(row: dict[str, Any], w: tuple[float, float], bias: float, anchor_min: float,
           verify_threshold: float) -> bool:
    """Whether the question would be answered (shown) under these settings."""
    if row["refused_by"] in ("no sources", "model") or row.get("error"):
        return False
    gate = row.get("answerability") or {}
    if gate.get("p_yes") is not None and w[0] * gate["p_yes"] + w[1] * _coverage(row) + bias < 0:
        return False
    checks = row.get("verification") or []
    if not checks:
        return not row["abstained"]

    def holds(check: dict[str, Any]) -> bool:
        if check["check"] in ("content", "uncited"):
            return False
        if check.get("anchor") is not None and check["anchor"] < anchor_min:
            return False
        return check.get("p_yes") is None or check["p_yes"] >= verify_threshold

    return any(holds(c) for c in checks)


def score(rows: Sequence[dict[str, Any]], shown: list[bool]) -> dict[str, float]:
    answerable = [(r, s) for r, s in zip(rows, shown) if not r["unanswerable"]]
    impossible = [(r, s) for r, s in zip(rows, shown) if r["unanswerable"]]
    shown_rows = [r for r, s in zip(rows, shown) if s]
    unsupported = sum(1 for r in shown_rows if r["unanswerable"] or not r.get("right"))
    return {
        "abstention": round(sum(not s for _, s in impossible) / max(len(impossible), 1), 4),
        "false_abstention": round(sum(not s for _, s in answerable) / max(len(answerable), 1), 4),
        "answered_and_right": round(sum(1 for r, s in answerable if s and r.get("right")) / max(len(answerable), 1), 4),
        "unsupported_rate": round(unsupported / len(shown_rows), 4) if shown_rows else 0.0,
    }


def tune(rows: Sequence[dict[str, Any]], target: float) -> dict[str, Any]:
    """The grid, its curve, and the chosen (gate, anchor_min, verify_threshold)."""
    w = gate_direction(rows)
    values = sorted({w[0] * r["answerability"]["p_yes"] + w[1] * _coverage(r)
                     for r in rows if (r.get("answerability") or {}).get("p_yes") is not None})
    cuts = [values[0] - 1e-3] + [float(v) for v in np.quantile(values, np.linspace(0.02, 0.9, OFFSETS))] if values else [0.0]
    curve = []
    for cut in cuts:
        for anchor_min in ANCHORS:
            for verify_threshold in VERIFY:
                shown = [replay(r, w, -cut, anchor_min, verify_threshold) for r in rows]
                curve.append({"bias": round(-cut, 5), "anchor_min": anchor_min, "verify_threshold": verify_threshold,
                              **score(rows, shown)})
    reaching = [c for c in curve if c["abstention"] >= target]
    if reaching:
        best = max(reaching, key=lambda c: (c["answered_and_right"], -c["false_abstention"], c["abstention"]))
    else:
        best = max(curve, key=lambda c: (c["abstention"] - c["false_abstention"], c["answered_and_right"]))
    front = _pareto(curve)
    return {"rows": len(rows), "target": target, "gate": {"w_yes": round(w[0], 4), "w_coverage": round(w[1], 4),
                                                             "bias": best["bias"]},
            "chosen": best, "reached_target": bool(reaching), "curve": front}


def _pareto(curve: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points no other point beats on both abstention and false abstention, by abstention."""
    front = [c for c in curve if not any(o["abstention"] >= c["abstention"] and o["false_abstention"] < c["false_abstention"]
                                         or o["abstention"] > c["abstention"] and o["false_abstention"] <= c["false_abstention"]
                                         for o in curve)]
    unique = {(c["abstention"], c["false_abstention"]): c for c in sorted(front, key=lambda c: -c["answered_and_right"])}
    return sorted(unique.values(), key=lambda c: c["abstention"])


def format_result(result: dict[str, Any]) -> str:
    g, c = result["gate"], result["chosen"]
    lines = [f"{result['dataset']} ({result['split']}), {result['rows']} questions; target abstention {result['target']}"
             f" {'reached' if result['reached_target'] else 'NOT reached'}",
             f"gate: {g['w_yes']}*P(yes) + {g['w_coverage']}*coverage {g['bias']:+} >= 0; "
             f"verify_anchor_min {c['anchor_min']}, verify_threshold {c['verify_threshold']}",
             f"on these rows: abstention {c['abstention']}, false abstention {c['false_abstention']}, "
             f"answered-and-right {c['answered_and_right']}, unsupported {c['unsupported_rate']}",
             "curve (abstention / false abstention / answered-and-right / settings):"]
    lines += [f"  {p['abstention']:.2f} / {p['false_abstention']:.2f} / {p['answered_and_right']:.2f}  "
              f"bias {p['bias']}, anchor {p['anchor_min']}, verify {p['verify_threshold']}" for p in result["curve"]]
    return "\n".join(lines)

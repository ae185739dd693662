"""``python -m rag.lab tune-trust``: fit the gate, the claim verifier and the confidence check together.

Input: the rows of one or more ``eval-answers --split tune --rows FILE`` runs made with every refusal only
recording (``generation.answer_check_calibrated=false``, ``answer_check_threshold=0``, ``verify_threshold=0``,
``verify_anchor_min=0``; ``answer_confidence_min`` 0): every question then carries P(yes) and coverage, the
answer's first-phrase confidence, and every claim its anchor share and the LLM's P(yes). Decisions are
replayed offline:

    abstain = no sources or gate(P(yes), coverage) < 0 or the model said "not found"
              or confidence[signal] < confidence_min
              or every claim fails (content check, anchor < anchor_min, claim P(yes) < verify_threshold)

Several files are pooled with each file weighing equally and, within it, each class (answerable,
unanswerable) equally: the gate's direction is a logistic regression with those sample weights, and every
rate on the grid is the mean of the files' rates, so 30 + 30 SQuAD 2.0 questions count as much as 30 + 30
ACE-whQA ones and a line that only learns one article's wording cannot win on it alone. The gate's offset,
``verify_anchor_min``, ``verify_threshold`` and the confidence threshold (per signal) are chosen on a grid: the
setting with abstention >= ``--target`` that answers most answerable questions right, else the one with the
highest abstention minus false abstention. The curve (abstention against false abstention) and the AUC of each
signal per file are printed, so where the model, not the method, is the limit shows.

``--replay`` prints the same curve for given values on other rows (the report run's, for the docs); it
chooses nothing. Report the chosen values with ``eval-answers --split report``, never on tune rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag.answer.confidence import SIGNALS
from rag.config import RagConfig
from rag.lab.trust_signals import (confidence_of, coverage_of, file_weights, gate_direction, signal_aucs,
                                   verification_holds)

OFFSETS = 24
ANCHORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
VERIFY = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
CONFIDENCE = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("tune-trust", help="fit the gate, verifier and confidence check on tune rows")
    parser.add_argument("rows", type=Path, nargs="+", help="eval-answers --rows FILE reports (pooled)")
    parser.add_argument("--target", type=float, default=0.85, help="abstention on unanswerables to reach")
    parser.add_argument("--replay", nargs=6, default=None,
                        metavar=("W_YES", "W_COVERAGE", "BIAS", "ANCHOR_MIN", "VERIFY", "SIGNAL:MIN"),
                        help="only print the curve of these values on the rows (e.g. report rows); chooses nothing")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, config: RagConfig) -> int:
    sets = [load_rows(path) for path in args.rows]
    if args.replay is not None:
        result = replay_given(sets, *parse_replay(args.replay))
    else:
        result = tune(sets, args.target)
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0


def load_rows(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """(name, rows) of an ``eval-answers --rows`` report (its first backend)."""
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    backend = next(iter(report["backends"].values()))
    return f"{report.get('dataset', Path(path).stem)} ({report.get('split', '?')})", backend["rows"]


def parse_replay(values: Sequence[str]) -> tuple[tuple[float, float], float, float, float, str, float]:
    """(w, bias, anchor_min, verify_threshold, signal, confidence_min) from the ``--replay`` words."""
    signal, _, minimum = values[5].partition(":")
    if signal not in SIGNALS:
        raise SystemExit(f"error: --replay's last value must be SIGNAL:MIN with SIGNAL one of {', '.join(SIGNALS)}")
    return ((float(values[0]), float(values[1])), float(values[2]), float(values[3]), float(values[4]), signal,
            float(minimum or 0))


class Replay:
    """The recorded rows of all files as arrays, so one grid point is a few vectorised comparisons.

    Args:
        sets: (name, rows) per file.
        w: The gate's (w_yes, w_coverage).
    """

    def __init__(self, sets: Sequence[tuple[str, list[dict[str, Any]]]], w: tuple[float, float]) -> None:
        rows = [r for _, rs in sets for r in rs]
        self.rows = rows
        self.file = np.array([i for i, (_, rs) in enumerate(sets) for _ in rs], dtype=int)
        self.files = len(sets)
        self.unanswerable = np.array([bool(r["unanswerable"]) for r in rows])
        # a report row the confidence check refused was scored as not shown: whether its draft held a gold answer
        # says whether a looser threshold would have shown a right answer (tune rows record, so never refuse so)
        self.right = np.array([bool(r.get("right")) or (r.get("refused_by") == "confidence" and bool(r.get("gold_in_draft")))
                               for r in rows])
        self.refused = np.array([r["refused_by"] in ("no sources", "model") or bool(r.get("error")) for r in rows])
        p_yes = [(r.get("answerability") or {}).get("p_yes") for r in rows]
        self.gate_score = np.array([np.inf if p is None else w[0] * p + w[1] * coverage_of(r)
                                    for p, r in zip(p_yes, rows)])
        self.confidence = {s: np.array([np.inf if confidence_of(r, s) is None else confidence_of(r, s) for r in rows])
                           for s in SIGNALS}
        self.holds = {(a, v): np.array([verification_holds(r, a, v) for r in rows]) for a in ANCHORS for v in VERIFY}

    def holds_at(self, anchor_min: float, verify_threshold: float) -> np.ndarray:
        key = (anchor_min, verify_threshold)
        if key not in self.holds:
            self.holds[key] = np.array([verification_holds(r, anchor_min, verify_threshold) for r in self.rows])
        return self.holds[key]

    def shown(self, bias: float, anchor_min: float, verify_threshold: float, signal: str, minimum: float) -> np.ndarray:
        gate_ok = self.gate_score + bias >= 0
        confident = self.confidence[signal] >= minimum if minimum > 0 else np.ones(len(self.rows), dtype=bool)
        return ~self.refused & gate_ok & confident & self.holds_at(anchor_min, verify_threshold)

    def score(self, shown: np.ndarray) -> dict[str, float]:
        """Each rate as the mean of the files' rates (every file weighs the same)."""
        rates: dict[str, list[float]] = {"abstention": [], "false_abstention": [], "answered_and_right": [],
                                         "unsupported_rate": []}
        for f in range(self.files):
            mine = self.file == f
            impossible, answerable = mine & self.unanswerable, mine & ~self.unanswerable
            shown_here = mine & shown
            rates["abstention"].append(_mean(~shown[impossible]))
            rates["false_abstention"].append(_mean(~shown[answerable]))
            rates["answered_and_right"].append(_mean(shown[answerable] & self.right[answerable]))
            rates["unsupported_rate"].append(_mean(self.unanswerable[shown_here] | ~self.right[shown_here]))
        return {k: round(float(np.mean([v for v in vs if v is not None] or [0.0])), 4) for k, vs in rates.items()}


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def _cuts(replay: Replay) -> list[float]:
    values = np.unique(replay.gate_score[np.isfinite(replay.gate_score)])
    if not values.size:
        return [0.0]
    return [float(values[0]) - 1e-3] + [float(v) for v in np.quantile(values, np.linspace(0.02, 0.9, OFFSETS))]


def _grid(replay: Replay, cuts: Sequence[float], anchors: Sequence[float], verify: Sequence[float],
          confidence: Sequence[tuple[str, float]]) -> list[dict[str, Any]]:
    curve = []
    for cut in cuts:
        for anchor_min in anchors:
            for verify_threshold in verify:
                for signal, minimum in confidence:
                    shown = replay.shown(-cut, anchor_min, verify_threshold, signal, minimum)
                    curve.append({"bias": round(-cut, 5), "anchor_min": anchor_min, "verify_threshold": verify_threshold,
                                  "confidence_signal": signal, "confidence_min": minimum, **replay.score(shown)})
    return curve


def tune(sets: Sequence[tuple[str, list[dict[str, Any]]]], target: float) -> dict[str, Any]:
    """The grid over the pooled files, its curve, the chosen values and each signal's AUC per file."""
    rows = [r for _, rs in sets for r in rs]
    w = gate_direction(rows, file_weights(sets))
    replay = Replay(sets, w)
    confidence = [("mean_p", 0.0)] + [(s, m) for s in SIGNALS for m in CONFIDENCE if m > 0]
    curve = _grid(replay, _cuts(replay), ANCHORS, VERIFY, confidence)
    reaching = [c for c in curve if c["abstention"] >= target]
    if reaching:
        best = max(reaching, key=lambda c: (c["answered_and_right"], -c["false_abstention"], c["abstention"],
                                            -c["confidence_min"]))
    else:
        best = max(curve, key=lambda c: (c["abstention"] - c["false_abstention"], c["answered_and_right"],
                                         -c["confidence_min"]))
    return {"files": [name for name, _ in sets], "rows": len(rows), "target": target,
            "gate": {"w_yes": round(w[0], 4), "w_coverage": round(w[1], 4), "bias": best["bias"]},
            "chosen": best, "reached_target": bool(reaching), "curve": pareto(curve),
            "per_file": _per_file(sets, replay, best), "auc": signal_aucs(sets, w)}


def replay_given(sets: Sequence[tuple[str, list[dict[str, Any]]]], w: tuple[float, float], bias: float,
                 anchor_min: float, verify_threshold: float, signal: str, minimum: float) -> dict[str, Any]:
    """The given values' figures on these rows and the curve of the gate's offset and the confidence threshold
    around them (the other values fixed); nothing is chosen."""
    replay = Replay(sets, w)
    point = {"bias": bias, "anchor_min": anchor_min, "verify_threshold": verify_threshold, "confidence_signal": signal,
             "confidence_min": minimum, **replay.score(replay.shown(bias, anchor_min, verify_threshold, signal, minimum))}
    curve = _grid(replay, sorted(set(_cuts(replay)) | {-bias}), (anchor_min,), (verify_threshold,),
                  [(signal, m) for m in sorted(set(CONFIDENCE) | {minimum})])
    rows = [r for _, rs in sets for r in rs]
    return {"files": [name for name, _ in sets], "rows": len(rows), "target": None, "replay": True,
            "gate": {"w_yes": w[0], "w_coverage": w[1], "bias": bias}, "chosen": point, "reached_target": None,
            "curve": pareto(curve), "per_file": _per_file(sets, replay, point), "auc": signal_aucs(sets, w)}


def _per_file(sets: Sequence[tuple[str, list[dict[str, Any]]]], replay: Replay, point: dict[str, Any]) -> dict[str, Any]:
    shown = replay.shown(point["bias"], point["anchor_min"], point["verify_threshold"], point["confidence_signal"],
                         point["confidence_min"])
    out = {}
    for f, (name, rows) in enumerate(sets):
        one = Replay([(name, rows)], (0.0, 0.0))
        out[name] = one.score(shown[replay.file == f])
    return out


def pareto(curve: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points no other point beats on both abstention and false abstention, by abstention (one per pair of
    rates, the one answering most right)."""
    unique: dict[tuple[float, float], dict[str, Any]] = {}
    for c in curve:
        key = (c["abstention"], c["false_abstention"])
        if key not in unique or c["answered_and_right"] > unique[key]["answered_and_right"]:
            unique[key] = c
    front, best_false = [], float("inf")
    for key in sorted(unique, key=lambda k: (-k[0], k[1])):
        if key[1] < best_false:
            front.append(unique[key])
            best_false = key[1]
    return sorted(front, key=lambda c: c["abstention"])


def format_result(result: dict[str, Any]) -> str:
    g, c = result["gate"], result["chosen"]
    head = ("REPLAY of given values (chooses nothing)" if result.get("replay") else
            f"target abstention {result['target']} {'reached' if result['reached_target'] else 'NOT reached'}")
    lines = [f"{' + '.join(result['files'])}: {result['rows']} questions, each file weighing equally; {head}",
             f"gate: {g['w_yes']}*P(yes) + {g['w_coverage']}*coverage {g['bias']:+} >= 0; "
             f"verify_anchor_min {c['anchor_min']}, verify_threshold {c['verify_threshold']}, "
             f"confidence {c['confidence_signal']} >= {c['confidence_min']}",
             f"pooled: abstention {c['abstention']}, false abstention {c['false_abstention']}, "
             f"answered-and-right {c['answered_and_right']}, unsupported {c['unsupported_rate']}"]
    lines += [f"  {name}: abstention {s['abstention']}, false abstention {s['false_abstention']}, answered-and-right "
              f"{s['answered_and_right']}" for name, s in result["per_file"].items()]
    lines.append("AUC (answerable above unanswerable; 0.5 = no signal):")
    for name, aucs in result["auc"].items():
        lines.append(f"  {name} ({aucs['n']}): " + ", ".join(f"{k} {'n/a' if v is None else f'{v:.3f}'}"
                                                          for k, v in aucs.items() if k != "n"))
    lines.append("curve (abstention / false abstention / answered-and-right / settings):")
    lines += [f"  {p['abstention']:.2f} / {p['false_abstention']:.2f} / {p['answered_and_right']:.2f}  bias {p['bias']}, "
              f"anchor {p['anchor_min']}, verify {p['verify_threshold']}, {p['confidence_signal']} >= {p['confidence_min']}"
              for p in result["curve"]]
    return "\n".join(lines)

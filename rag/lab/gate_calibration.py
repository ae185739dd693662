"""``python -m rag calibrate-gate``: fit the answerability gate of one LLM on one question set.

The library is the one ``eval-answers`` builds (rag.evaluation.answer_library.build_library): answerable questions
whose paragraph is indexed and left-out questions whose paragraph is not. For each question the engine
retrieves and fits the sources as it would to answer, then runs only the gate (one forward pass, no
answer), recording P(yes) and the question's coverage by the best source sentence. A class-balanced
logistic regression on the two gives the gate's direction; its offset is set so that ``--target`` of
the left-out questions are refused on this sample. The printed ``Gate(...)`` goes into
``rag.answer.gate.CALIBRATED_GATES``; report quality with ``eval-answers`` on a *different* seed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rag.answer.gate import Gate
from rag.config import DEFAULT_HOME, RagConfig

logger = logging.getLogger(__name__)


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("calibrate-gate", help="fit the answerability gate of the configured LLM")
    parser.add_argument("--dataset", default="squad", help="squad, cmrc2018 or a SQuAD-format JSON path")
    parser.add_argument("--n", type=int, default=40, help="answerable questions (default 40)")
    parser.add_argument("--unanswerable", type=int, default=40, help="left-out questions (default 40)")
    parser.add_argument("--distractors", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="use a seed other than the one you report (default 1)")
    parser.add_argument("--target", type=float, default=0.85, help="share of left-out questions to refuse")
    parser.add_argument("--coverage-only", action="store_true",
                        help="fit on coverage alone (for a model whose P(yes) does not separate)")
    parser.add_argument("--from-rows", type=Path, default=None, metavar="JSON",
                        help="refit from the rows of an earlier --json report instead of asking the LLM")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.evaluation.answer_library import build_library, resolve_qa_dataset
    from rag.evaluation.answers import answer_engine
    from rag.models.llms import load_embedded_llm

    if args.from_rows is not None:
        earlier = json.loads(args.from_rows.read_text(encoding="utf-8"))
        rows, about = earlier["rows"], {k: earlier[k] for k in ("dataset", "model", "seed")}
    else:
        try:
            path = resolve_qa_dataset(args.dataset)
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="citewise-calibrate-") as tmp:
            library = build_library(path, config, n=args.n, unanswerable=args.unanswerable,
                                    distractors=args.distractors, seed=args.seed, workdir=Path(tmp))
            llm = load_embedded_llm(config.llm, config.generation, DEFAULT_HOME)
            engine = answer_engine(config, library.store, llm, f"embedded:{config.llm.embedded_model}")
            rows = collect(engine, config, [(q.question, True) for q in library.chosen]
                           + [(q.question, False) for q in library.held_out])
            library.store.close()
        about = {"dataset": path.name, "model": config.llm.embedded_model, "seed": args.seed}
    report = {**fit(rows, args.target, coverage_only=args.coverage_only), **about}
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def collect(engine: Any, config: RagConfig, questions: Sequence[tuple[str, bool]]) -> list[dict[str, Any]]:
    """P(yes) and coverage for each (question, answerable) — the gate only, no answer generated."""
    rows = []
    for number, (question, answerable) in enumerate(questions, start=1):
        stream = engine.stream(question)
        if not stream.sources or stream.messages is None:
            logger.info("%d/%d: no sources; skipped", number, len(questions))
            continue
        verdict = engine.check_answerable(stream.request, stream.messages, stream.sources, stream.retrieval,
                                          question)
        if verdict.p_yes is None:
            continue
        rows.append({"question": question, "answerable": answerable, "p_yes": verdict.p_yes,
                     "coverage": 1.0 if verdict.coverage is None else verdict.coverage, "ms": verdict.ms})
        logger.info("%d/%d answerable=%s P(yes)=%.3f coverage=%.3f (%.0f ms)", number, len(questions),
                    answerable, verdict.p_yes, rows[-1]["coverage"], verdict.ms)
    return rows


def fit(rows: list[dict[str, Any]], target: float, *, coverage_only: bool = False) -> dict[str, Any]:
    """Fit the gate; report each signal's AUC and the refusal rates the gate gives on these rows.

    With ``coverage_only`` the gate is a threshold on coverage (``w_yes`` 0): coverage needs no LLM, so
    rows gathered with one model calibrate another model's gate that way.
    """
    from sklearn.linear_model import LogisticRegression

    x = np.array([[r["p_yes"], r["coverage"]] for r in rows], dtype=float)
    y = np.array([r["answerable"] for r in rows], dtype=int)
    if len(set(y.tolist())) < 2:
        raise ValueError("calibration needs both answerable and left-out questions with a P(yes)")
    if coverage_only:
        w_yes, w_coverage = 0.0, 1.0
    else:
        model = LogisticRegression(class_weight="balanced").fit(x, y)
        w_yes, w_coverage = (float(v) for v in model.coef_[0])
    scale = abs(w_yes) + abs(w_coverage) or 1.0
    w_yes, w_coverage = w_yes / scale, w_coverage / scale
    direction = x @ np.array([w_yes, w_coverage])
    left_out = np.sort(direction[y == 0])
    # the offset puts `target` of the left-out scores below zero: halfway between the k-th lowest and the
    # next higher one, so rounding the printed gate cannot move a question across the line
    k = min(len(left_out) - 1, max(0, int(np.ceil(target * len(left_out))) - 1))
    higher = left_out[left_out > left_out[k]]
    cut = (left_out[k] + higher[0]) / 2 if higher.size else left_out[k] + 1e-3
    gate = Gate(round(w_yes, 4), round(w_coverage, 4), round(-float(cut), 5))
    answered = np.array([gate.score(p, c) >= 0 for p, c in x])
    return {
        "answerable": int(y.sum()), "left_out": int((y == 0).sum()),
        "auc": {"p_yes": auc(x[:, 0], y), "coverage": auc(x[:, 1], y), "gate": auc(direction, y)},
        "gate": {"w_yes": gate.w_yes, "w_coverage": gate.w_coverage, "bias": gate.bias},
        "abstention": round(float((~answered[y == 0]).mean()), 4),
        "false_abstention": round(float((~answered[y == 1]).mean()), 4),
        "rows": rows,
    }


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a random answerable question scores above a random left-out one."""
    positive, negative = scores[labels == 1], scores[labels == 0]
    wins = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    return round(float(wins / (len(positive) * len(negative))), 4)


def format_report(report: dict[str, Any]) -> str:
    g = report["gate"]
    return "\n".join([
        f"{report['model']} on {report['dataset']} (seed {report['seed']}): {report['answerable']} answerable, "
        f"{report['left_out']} left out",
        f"AUC  P(yes) {report['auc']['p_yes']:.3f}  coverage {report['auc']['coverage']:.3f}  "
        f"gate {report['auc']['gate']:.3f}",
        f"on this sample: abstention {report['abstention']:.2f}, false abstention {report['false_abstention']:.2f}",
        f"Gate({g['w_yes']}, {g['w_coverage']}, {g['bias']})",
    ])

"""``python -m rag eval-answers``: answer trust and quality over question sets built into small PDFs.

Two kinds of unanswerable question:

* real ones (``--dataset squad2|cjrc|ace-whqa|cuad`` or ``--split tune|report``): the question's paragraph
  is in the library and does not hold the answer (``rag.evaluation.unanswerable``, with a fixed split:
  tune thresholds and prompts on ``tune``, report on ``report``);
* left out (``--dataset squad|cmrc2018``): the paragraph is not indexed; questions whose gold answer is
  stated anywhere in the library are dropped.

Each LLM backend answers every question through the app's query engine; the rows are scored against
gold by ``rag.evaluation.answer_scoring`` (abstention, false abstention, answered-and-right, unsupported
rate among shown answers, highlight on the gold span, TTFT p50/p95, whole answer p50/p95, tokens/s).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.answer_library import build_library, build_set_library, resolve_qa_dataset
from rag.evaluation.answer_scoring import ask_all, summarise

logger = logging.getLogger(__name__)

_QUESTIONS = Path(__file__).resolve().parent
# The broad-question sets: "broad" was used to choose how broad questions are handled, "broad-holdout" was
# written blind afterwards and reported once, then used to choose too; "broad-holdout2" was written blind after
# that and reported once, then used to choose too; "broad-holdout3" … "broad-holdout11" likewise after that. The
# "broad-unanswerable" sets ask about what their documents do not cover: "-dev" to choose on, "-report" reported once
# and then used to choose too, "-holdout" … "-holdout6" written blind after that (docs/answering.md, "Broad questions").
BROAD_SETS = {"broad": _QUESTIONS / "broad_questions.json",
              "broad-holdout": _QUESTIONS / "broad_questions_holdout.json",
              "broad-holdout2": _QUESTIONS / "broad_questions_holdout2.json",
              "broad-holdout3": _QUESTIONS / "broad_questions_holdout3.json",
              "broad-holdout4": _QUESTIONS / "broad_questions_holdout4.json",
              "broad-holdout5": _QUESTIONS / "broad_questions_holdout5.json",
              "broad-holdout6": _QUESTIONS / "broad_questions_holdout6.json",
              "broad-holdout7": _QUESTIONS / "broad_questions_holdout7.json",
              "broad-holdout8": _QUESTIONS / "broad_questions_holdout8.json",
              "broad-holdout9": _QUESTIONS / "broad_questions_holdout9.json",
              "broad-holdout10": _QUESTIONS / "broad_questions_holdout10.json",
              "broad-holdout11": _QUESTIONS / "broad_questions_holdout11.json",
              "broad-named": _QUESTIONS / "broad_questions_named.json",  # asked with --whole-library
              "broad-named2": _QUESTIONS / "broad_questions_named2.json",  # likewise, written blind after it
              "broad-named3": _QUESTIONS / "broad_questions_named3.json",  # likewise, written blind after that
              "broad-named4": _QUESTIONS / "broad_questions_named4.json",  # and a fourth
              "broad-unanswerable-dev": _QUESTIONS / "broad_unanswerable_dev.json",
              "broad-unanswerable-report": _QUESTIONS / "broad_unanswerable_report.json",
              "broad-unanswerable-holdout": _QUESTIONS / "broad_unanswerable_holdout.json",
              "broad-unanswerable-holdout2": _QUESTIONS / "broad_unanswerable_holdout2.json",
              "broad-unanswerable-holdout3": _QUESTIONS / "broad_unanswerable_holdout3.json",
              "broad-unanswerable-holdout4": _QUESTIONS / "broad_unanswerable_holdout4.json",
              "broad-unanswerable-holdout5": _QUESTIONS / "broad_unanswerable_holdout5.json",
              "broad-unanswerable-holdout6": _QUESTIONS / "broad_unanswerable_holdout6.json"}


def run_eval_answers(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.evaluation.unanswerable import UNANSWERABLE_SETS, load_set

    if args.dataset in BROAD_SETS:
        return _run_broad(args, config)
    broad_only = [flag for flag, value in (("--library", getattr(args, "library", None)),
                                           ("--whole-library", getattr(args, "whole_library", False))) if value]
    if broad_only:  # said, not ignored: the run would be read as one asked of the whole library
        print(f"error: {' and '.join(broad_only)} only apply to the broad sets ({', '.join(BROAD_SETS)}), "
              f"not to {args.dataset!r}", file=sys.stderr)
        return 2
    split = getattr(args, "split", None)
    real_unanswerables = args.dataset in UNANSWERABLE_SETS or split is not None
    try:
        qa_set = load_set(args.dataset, split or "report") if real_unanswerables else None
        path = None if real_unanswerables else resolve_qa_dataset(args.dataset)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unanswerable = args.n // 3 if args.unanswerable is None else args.unanswerable
    with tempfile.TemporaryDirectory(prefix="citewise-eval-answers-") as tmp:
        report = evaluate_answers(path, config, n=args.n, unanswerable=unanswerable, distractors=args.distractors,
                                  seed=args.seed, workdir=Path(tmp), also_server=args.also_server, qa_set=qa_set)
    rows_file = getattr(args, "rows", None)
    if rows_file:
        Path(rows_file).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    return 0


def evaluate_answers(path: Path | None, config: RagConfig, *, n: int, unanswerable: int, distractors: int, seed: int,
                     workdir: Path, router: Any = None, also_server: bool = False, llm_factory: Any = None,
                     qa_set: Any = None) -> dict[str, Any]:
    """Build the library, ask every question with each backend and aggregate the metrics.

    With ``qa_set`` (``rag.evaluation.unanswerable``) the unanswerable questions keep their paragraph in the
    library; otherwise they are SQuAD/CMRC questions whose paragraph is left out (and dropped when their gold
    answer appears anywhere in the library).
    """
    if qa_set is not None:
        library = build_set_library(qa_set, config, n=n, unanswerable=unanswerable, seed=seed, workdir=workdir,
                                    distractors=max(distractors, 0) * 8, router=router)
        about = {"dataset": qa_set.name, "split": qa_set.split, "mode": "paragraph in the library"}
    else:
        library = build_library(path, config, n=n, unanswerable=unanswerable, distractors=distractors, seed=seed,
                                workdir=workdir, router=router)
        about = {"dataset": path.name, "split": f"seed {seed}", "mode": "paragraph left out"}
    store = library.store
    backends = _backends(config, also_server, llm_factory)
    report: dict[str, Any] = {**about, "seed": seed, "answerable": len(library.chosen),
                              "unanswerable": len(library.held_out), "documents": len(store.documents()),
                              "chunks": len(store.keywords), "ingest_s": library.ingest_s,
                              "load_before": round(os.getloadavg()[0], 2), "backends": {}}
    for name, build in backends:
        try:
            engine = answer_engine(config, store, build(), name)
        except Exception as exc:  # noqa: BLE001 - report the backend as unavailable
            report["backends"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        rows = ask_all(engine, library.chosen, library.held_out, library.gold_locations, store)
        report["backends"][name] = {**summarise(rows), "rows": rows}
    report["load_after"] = round(os.getloadavg()[0], 2)
    store.close()
    return report


def _run_broad(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.evaluation.broad_eval import evaluate_broad, load_questions
    from rag.models.llms import load_embedded_llm

    questions = load_questions(BROAD_SETS[args.dataset])
    llm = load_embedded_llm(config.llm, config.generation, DEFAULT_HOME)
    library = getattr(args, "library", None)
    with tempfile.TemporaryDirectory(prefix="citewise-eval-broad-") as tmp:
        try:
            report = evaluate_broad(config, llm, Path(library or tmp), questions=questions,
                                    whole_library=getattr(args, "whole_library", False))
        except FileNotFoundError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    report["load_average"] = round(os.getloadavg()[0], 2)
    if getattr(args, "rows", None):
        Path(args.rows).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else
          f"broad questions: {report['questions']}, read as broad {report['read_as_broad']}, answered "
          f"{report['answered']}, answered-and-supported {report['answered_and_supported']}; not in their "
          f"document: {report['unanswerable']}, abstained {report['abstained_on_unanswerable']} "
          f"(load average {report['load_average']})")
    return 0


def _backends(config: RagConfig, also_server: bool, llm_factory: Any) -> list[tuple[str, Any]]:
    if llm_factory is not None:
        return [("given", llm_factory)]
    from rag.models.llms import OpenAICompatibleLLM, load_embedded_llm

    backends: list[tuple[str, Any]] = [
        (f"embedded:{config.llm.embedded_model}", lambda: load_embedded_llm(config.llm, config.generation, DEFAULT_HOME))]
    if config.llm.backend == "openai" or also_server:
        def remote() -> Any:
            llm = OpenAICompatibleLLM(
                base_url=config.llm.base_url, model=config.llm.model, api_key_env=config.llm.api_key_env,
                connect_timeout_s=config.llm.connect_timeout_s, request_timeout_s=config.llm.request_timeout_s,
                first_response_timeout_s=config.llm.first_response_timeout_s,
                temperature=config.generation.temperature, max_tokens=config.generation.max_answer_tokens)
            llm.health_check()
            return llm
        backends.append((f"openai:{config.llm.model}@{config.llm.base_url}", remote))
    return backends


def answer_engine(config: RagConfig, store: Any, llm: Any, name: str) -> Any:
    """The app's query engine for ``config`` over the evaluation library, answering with ``llm``."""
    from rag.answer.engine import CitewiseQueryEngine
    from rag.answer.llm_runner import LLMRunner

    return CitewiseQueryEngine.from_config(config, store, LLMRunner(llm, backend=name.split(":")[0]))


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{report['dataset']} ({report['mode']}, {report['split']}): {report['answerable']} answerable + "
             f"{report['unanswerable']} unanswerable questions, {report['documents']} PDFs / {report['chunks']} chunks "
             f"(ingest {report['ingest_s']} s); load average {report['load_before']} -> {report.get('load_after')}"]
    keys = ("abstention", "false_abstention", "false_abstention_by", "false_abstention_gold_in_evidence",
            "gold_in_evidence", "answered_and_right", "unsupported_rate",
            "shown", "highlight_gold_span", "f1", "ttft_ms_p50", "ttft_ms_p95", "ttft_ms_p50_generated",
            "total_ms_p50", "total_ms_p95", "tokens_per_s", "errors")
    for name, scores in report["backends"].items():
        lines.append(f"\n{name}")
        if "error" in scores:
            lines.append(f"  unavailable: {scores['error']}")
            continue
        lines.extend(f"  {key:<22} {scores.get(key)}" for key in keys)
    return "\n".join(lines)

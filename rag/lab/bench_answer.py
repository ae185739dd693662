"""``python -m rag bench answer``: sources, first token and whole verified answer, per bundled model.

Builds the ``eval-answers`` library of a real-unanswerable set's **report** split (``--dataset squad2`` or
``cjrc``; the paragraph of every question, unanswerable ones too, is in the library), then asks
``--questions`` of them (half answerable, half not) through the app's query engine with the default
settings: evidence fitting within ``generation.max_context_tokens`` (counted with the model's tokenizer),
the answerability gate, and claim verification after the answer. Reported: the time until the numbered
sources are ready, TTFT (``stream()`` to the first token; the first question is "cold", the fixed system
prompt not yet in llama.cpp's KV cache, later ones are "warm", as in a conversation), the whole answer
including verification, prompt tokens evaluated before the first token, generation speed, and the load
average before and after (on a shared machine llama.cpp slows down 2-7x: compare idle runs only).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from statistics import median

from rag.config import DEFAULT_HOME, RagConfig


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag bench answer", description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=config.llm.embedded_model,
                        help="comma-separated bundled model names (default: llm.embedded_model)")
    parser.add_argument("--dataset", default="squad2", help="squad2 or cjrc (default squad2), report split")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(config, [m.strip() for m in args.models.split(",") if m.strip()], args.dataset, args.questions,
                 args.seed)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_report(report))
    return 0


def run(config: RagConfig, models: list[str], dataset: str, questions: int, seed: int) -> dict:
    from rag.evaluation.answer_library import build_set_library
    from rag.evaluation.answers import answer_engine
    from rag.evaluation.unanswerable import load_set
    from rag.models.llms import load_embedded_llm

    report = {"dataset": dataset, "split": "report", "max_context_tokens": config.generation.max_context_tokens,
              "max_answer_tokens": config.generation.max_answer_tokens, "n_threads": config.llm.n_threads,
              "cpus": os.cpu_count(), "models": []}
    with tempfile.TemporaryDirectory(prefix="citewise-bench-answer-") as tmp:
        library = build_set_library(load_set(dataset, "report"), config, n=questions - questions // 2,
                                    unanswerable=questions // 2, seed=seed, workdir=Path(tmp), distractors=16)
        items = [q for pair in zip(library.chosen, library.held_out) for q in pair]
        items += library.chosen[len(library.held_out):] + library.held_out[len(library.chosen):]
        report["questions"] = len(items)
        for name in models:
            llm = load_embedded_llm(replace(config.llm, embedded_model=name), config.generation, DEFAULT_HOME)
            engine = answer_engine(config, library.store, llm, f"embedded:{name}")
            load_before = round(os.getloadavg()[0], 2)
            rows = []
            for item in items:
                result = engine.answer(item.question)
                t = result.timings
                rows.append({"question": item.question, "unanswerable": item.impossible,
                             "sources_ms": t.get("sources_ms"), "ttft_ms": t.get("ttft_ms"),
                             "total_ms": t.get("total_ms"), "verify_ms": t.get("verify_ms"),
                             "answer_check_ms": t.get("answer_check_ms"),
                             "prompt_tokens": t.get("gate_prompt_tokens", t.get("prompt_tokens_evaluated")),
                             "tokens_per_s": t.get("tokens_per_s"), "abstained": result.abstained})
            report["models"].append({"model": name, **summary(rows), "load_before": load_before,
                                     "load_after": round(os.getloadavg()[0], 2), "rows": rows})
            del engine, llm
        library.store.close()
    return report


def summary(rows: list[dict]) -> dict:
    warm = rows[1:] or rows
    return {
        "sources_ms_p50": _pct([r["sources_ms"] for r in rows], 50), "sources_ms_max": _pct([r["sources_ms"] for r in rows], 100),
        "ttft_cold_ms": rows[0]["ttft_ms"] if rows else None,
        "ttft_warm_p50_ms": _pct([r["ttft_ms"] for r in warm], 50), "ttft_warm_p95_ms": _pct([r["ttft_ms"] for r in warm], 95),
        "total_warm_p50_ms": _pct([r["total_ms"] for r in warm], 50), "total_warm_p95_ms": _pct([r["total_ms"] for r in warm], 95),
        "verify_p50_ms": _pct([r["verify_ms"] for r in rows if r["verify_ms"] is not None], 50),
        "prompt_tokens_p50": _pct([r["prompt_tokens"] for r in warm if r["prompt_tokens"] is not None], 50),
        "tokens_per_s": round(median(s), 1) if (s := [r["tokens_per_s"] for r in rows if r["tokens_per_s"]]) else None,
        "abstained": sum(r["abstained"] for r in rows),
    }


def _pct(values: list, q: int) -> float | None:
    data = sorted(v for v in values if v is not None)
    if not data:
        return None
    return round(float(data[max(1, -(-q * len(data) // 100)) - 1]), 1)


def format_report(report: dict) -> str:
    lines = [f"{report['dataset']} ({report['split']} split): {report['questions']} questions, max_context_tokens "
             f"{report['max_context_tokens']}, max_answer_tokens {report['max_answer_tokens']}, n_threads "
             f"{report['n_threads']}, cpus {report['cpus']}"]
    for r in report["models"]:
        sec = lambda v: "n/a" if v is None else f"{v / 1000:.1f} s"  # noqa: E731
        lines.append(
            f"  {r['model']}: sources p50 {r['sources_ms_p50']} ms, max {r['sources_ms_max']} ms; TTFT cold "
            f"{sec(r['ttft_cold_ms'])}, warm p50 {sec(r['ttft_warm_p50_ms'])}, p95 {sec(r['ttft_warm_p95_ms'])}; "
            f"whole answer with verification warm p50 {sec(r['total_warm_p50_ms'])}, p95 {sec(r['total_warm_p95_ms'])} "
            f"(verification p50 {sec(r['verify_p50_ms'])}); prompt tokens before the first token p50 "
            f"{r['prompt_tokens_p50']}; {r['tokens_per_s']} tok/s; {r['abstained']} abstained; load average "
            f"{r['load_before']} -> {r['load_after']}")
    return "\n".join(lines)

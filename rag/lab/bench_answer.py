"""``python -m rag bench answer``: time to first token of real answers, per bundled model (~1-3 min).

Builds a small library (SQuAD dev paragraphs as PDFs, one paragraph per page, 4 per PDF, like
``eval-answers``), then asks ``--questions`` distinct questions through the app's query engine with the
default settings: the answerability check, the context budget (``generation.max_context_tokens``,
counted with the model's tokenizer) and ``llm.n_threads``. TTFT is measured from ``stream()`` to the
first answer token. The first question is "cold": the fixed system prompt is not yet in llama.cpp's
KV cache; later ones reuse it, as in a conversation. Answers are capped at ``--answer-tokens`` tokens
(TTFT does not depend on it). The load average is printed with the figures: on a shared machine
llama.cpp slows down 2-7x.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from statistics import median

from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, NAMED_DATASETS


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag bench answer", description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=config.llm.embedded_model,
                        help="comma-separated bundled model names (default: llm.embedded_model)")
    parser.add_argument("--dataset", default="squad", help="squad or cmrc2018 (default squad)")
    parser.add_argument("--questions", type=int, default=6)
    parser.add_argument("--answer-tokens", type=int, default=48)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(config, [m.strip() for m in args.models.split(",") if m.strip()], args.dataset,
                 args.questions, args.answer_tokens)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    print(f"{report['dataset']}: {report['questions']} questions, max_context_tokens "
          f"{report['max_context_tokens']}, n_threads {report['n_threads']}, cpus {report['cpus']}")
    for r in report["models"]:
        print(f"  {r['model']}: TTFT cold {r['ttft_cold_ms'] / 1000:.1f} s, warm p50 {r['ttft_warm_p50_ms'] / 1000:.1f} s, "
              f"max {r['ttft_max_ms'] / 1000:.1f} s; prompt tokens evaluated p50 {r['prompt_tokens_p50']}; "
              f"{r['tokens_per_s']} tok/s; load average {r['load_before']} -> {r['load_after']}")
    return 0


def run(config: RagConfig, models: list[str], dataset: str, questions: int, answer_tokens: int) -> dict:
    from rag.evaluation.answer_library import load_squad_items, write_paragraph_pdf
    from rag.evaluation.answers import answer_engine
    from rag.index.store import DocumentStore
    from rag.ingest.ingestor import Ingestor
    from rag.models.llms import load_embedded_llm
    from rag.runtime import build_router

    items, paragraphs, by_article = load_squad_items(DEFAULT_DATA_ROOT / NAMED_DATASETS[dataset])
    rng = random.Random(7)
    chosen, seen = [], set()
    for item in rng.sample(items, len(items)):
        if item.para_key not in seen:
            chosen.append(item)
            seen.add(item.para_key)
        if len(chosen) == questions:
            break
    report = {"dataset": dataset, "questions": len(chosen), "max_context_tokens": config.generation.max_context_tokens,
              "n_threads": config.llm.n_threads, "cpus": os.cpu_count(), "models": []}
    with tempfile.TemporaryDirectory(prefix="citewise-bench-answer-") as tmp:
        store_config = replace(config, storage=replace(config.storage, data_dir=str(Path(tmp) / "data"),
                                                       chroma_mode="embedded"))
        store = DocumentStore(store_config, build_router(config))
        ingestor = Ingestor(store, store_config)
        for index, item in enumerate(chosen):
            pool = [k for k in by_article[item.article] if k != item.para_key]
            keys = rng.sample(pool, min(3, len(pool))) + [item.para_key]
            pdf = Path(tmp) / f"q{index}.pdf"
            write_paragraph_pdf(pdf, [paragraphs[k] for k in keys])
            ingestor.ingest_path(pdf)
        run_config = replace(config, generation=replace(config.generation, max_answer_tokens=answer_tokens))
        for name in models:
            llm = load_embedded_llm(replace(config.llm, embedded_model=name), run_config.generation, DEFAULT_HOME)
            engine = answer_engine(run_config, store, llm, f"embedded:{name}")
            load_before = round(os.getloadavg()[0], 2)
            rows = []
            for item in chosen:
                started = time.perf_counter()
                result = engine.answer(item.question)
                rows.append({"question": item.question, "ttft_ms": result.timings.get("ttft_ms"),
                             "answer_check_ms": result.timings.get("answer_check_ms"),
                             "sources_ms": result.timings.get("sources_ms"),
                             "prompt_tokens": (llm.last_check_stats or {}).get("prompt_eval_tokens"),
                             "tokens_per_s": result.timings.get("tokens_per_s"), "abstained": result.abstained,
                             "total_s": round(time.perf_counter() - started, 1)})
            ttfts = [r["ttft_ms"] for r in rows]
            speeds = [r["tokens_per_s"] for r in rows if r["tokens_per_s"]]
            prompts = [r["prompt_tokens"] for r in rows[1:] if r["prompt_tokens"] is not None]
            report["models"].append({
                "model": name, "ttft_cold_ms": ttfts[0], "ttft_warm_p50_ms": median(ttfts[1:] or ttfts),
                "ttft_max_ms": max(ttfts), "prompt_tokens_p50": median(prompts) if prompts else None,
                "tokens_per_s": round(median(speeds), 1) if speeds else None,
                "load_before": load_before, "load_after": round(os.getloadavg()[0], 2), "rows": rows})
            del engine, llm
        store.close()
    return report

"""``python -m rag eval-answers``: answer quality over SQuAD v1.1 / CMRC 2018 built into small PDFs.

The questions, their PDFs and the library are built by ``rag.evaluation.answer_library``; each LLM
backend then answers every question through the app's query engine. Reported per backend:

* ``em`` / ``f1``: SQuAD-style normalisation (lower case, no punctuation/articles, word tokens); for
  Chinese, CMRC-style character-level F1. ``contains``: the gold answer appears in the answer.
* ``citation_precision``: share of citations whose cited chunk contains a gold answer.
* ``highlight_rate``: share of citations with a highlight on a page of the cited chunk;
  ``highlight_gold_page``: share of answered questions with a highlight on the gold page.
* ``abstention``: share of left-out questions answered with "not found in your documents".
* ``ttft_ms`` (mean, p50, first = cold prefix cache) and ``tokens_per_s``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from statistics import mean, median
from typing import Any


from rag.answer.citations import strip_markers
from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.answer_library import QAItem, build_library, resolve_qa_dataset
from rag.evaluation.answer_metrics import contains_answer, exact_match, f1_score
from rag.text.language import detect_language

logger = logging.getLogger(__name__)

def run_eval_answers(args: argparse.Namespace, config: RagConfig) -> int:
    try:
        path = resolve_qa_dataset(args.dataset)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unanswerable = args.n // 3 if args.unanswerable is None else args.unanswerable
    with tempfile.TemporaryDirectory(prefix="citewise-eval-answers-") as tmp:
        report = evaluate_answers(path, config, n=args.n, unanswerable=unanswerable, distractors=args.distractors,
                                  seed=args.seed, workdir=Path(tmp), also_server=args.also_server)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    return 0


def evaluate_answers(path: Path, config: RagConfig, *, n: int, unanswerable: int, distractors: int, seed: int,
                     workdir: Path, router: Any = None, also_server: bool = False,
                     llm_factory: Any = None) -> dict[str, Any]:
    """Build the PDFs, ingest them, ask every question with each backend and aggregate the metrics."""
    library = build_library(path, config, n=n, unanswerable=unanswerable, distractors=distractors, seed=seed,
                            workdir=workdir, router=router)
    store = library.store
    backends = _backends(config, also_server, llm_factory)
    report: dict[str, Any] = {"dataset": path.name, "answerable": len(library.chosen),
                              "unanswerable": len(library.held_out), "distractors_per_pdf": distractors,
                              "documents": len(store.documents()), "chunks": len(store.keywords),
                              "ingest_s": library.ingest_s, "backends": {}}
    for name, build in backends:
        try:
            engine = answer_engine(config, store, build(), name)
        except Exception as exc:  # noqa: BLE001 - report the backend as unavailable
            report["backends"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        report["backends"][name] = _score_backend(engine, config, library.chosen, library.held_out,
                                                  library.gold_locations, store)
    store.close()
    return report


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


def _score_backend(engine: Any, config: RagConfig, chosen: list[QAItem], held_out: list[QAItem],
                   gold_locations: dict[str, set[tuple[str, int]]], store: Any) -> dict[str, Any]:
    ems, f1s, contains, abstained_answerable = [], [], [], 0
    citations = precise = highlighted = 0
    gold_page_hits, answered = 0, 0
    ttfts, speeds, errors, rows = [], [], 0, []
    for item in chosen:
        result = engine.answer(item.question)
        chinese = detect_language(item.question) == "zh"
        text = strip_markers(result.answer)
        errors += bool(result.error)
        ems.append(0.0 if result.abstained else exact_match(text, item.answers, chinese))
        f1s.append(0.0 if result.abstained else f1_score(text, item.answers, chinese))
        contains.append(float(not result.abstained and contains_answer(text, item.answers, chinese)))
        abstained_answerable += result.abstained
        chunk_texts = {c.chunk_id: c.text for c in store.keywords.get([c.chunk_id for c in result.citations]).values()}
        gold = gold_locations.get(item.para_key, set())
        hit = False
        for citation in result.citations:
            citations += 1
            precise += contains_answer(chunk_texts.get(citation.chunk_id, citation.text), item.answers, chinese)
            source = next((s for s in result.sources if s.n == citation.n), None)
            pages = [p for p, rects in citation.pages if rects]
            if pages and (source is None or all(source.page_start <= p <= source.page_end for p in pages)):
                highlighted += 1
            hit = hit or any((citation.doc_id, p) in gold for p in pages)
        if not result.abstained:
            answered += 1
            gold_page_hits += hit
        ttfts.append(result.timings.get("ttft_ms", 0.0))
        if result.timings.get("tokens_per_s"):
            speeds.append(result.timings["tokens_per_s"])
        rows.append({"qid": item.qid, "question": item.question, "gold": item.answers[:3], "answer": result.answer,
                     "abstained": result.abstained, "f1": round(f1s[-1], 3),
                     "citations": [(c.n, c.page) for c in result.citations], "gold_page_hit": hit,
                     "ttft_ms": result.timings.get("ttft_ms"), "tokens": result.timings.get("tokens"),
                     "tokens_per_s": result.timings.get("tokens_per_s"),
                     "prompt_tokens_evaluated": result.timings.get("prompt_tokens_evaluated"),
                     "context_tokens": result.timings.get("context_tokens"), "error": result.error,
                     "answerability": result.trace.get("answerability")})
        logger.info("answerable %d/%d f1=%.2f abstained=%s citations=%d gold_page=%s ttft=%.0fms", len(rows),
                    len(chosen), f1s[-1], result.abstained, len(result.citations), hit,
                    result.timings.get("ttft_ms", 0.0))
    abstentions = []
    for item in held_out:
        result = engine.answer(item.question)
        abstentions.append(result.abstained)
        ttfts.append(result.timings.get("ttft_ms", 0.0))
        rows.append({"qid": item.qid, "question": item.question, "held_out": True, "answer": result.answer,
                     "abstained": result.abstained, "ttft_ms": result.timings.get("ttft_ms"),
                     "answerability": result.trace.get("answerability")})
        logger.info("left out %d/%d abstained=%s ttft=%.0fms", len(abstentions), len(held_out), result.abstained,
                    result.timings.get("ttft_ms", 0.0))
    return {
        "em": _avg(ems), "f1": _avg(f1s), "contains": _avg(contains),
        "false_abstention": _ratio(abstained_answerable, len(chosen)),
        "citation_precision": _ratio(precise, citations), "citations": citations,
        "highlight_rate": _ratio(highlighted, citations),
        "highlight_gold_page": _ratio(gold_page_hits, answered),
        "abstention": _ratio(sum(abstentions), len(abstentions)),
        "ttft_ms_first": round(ttfts[0], 1) if ttfts else None,
        "ttft_ms_mean": round(mean(ttfts), 1) if ttfts else None,
        "ttft_ms_p50": round(median(ttfts), 1) if ttfts else None,
        "tokens_per_s": round(mean(speeds), 2) if speeds else None, "errors": errors, "rows": rows,
    }


def _avg(values: list[float]) -> float | None:
    return round(mean(values), 4) if values else None


def _ratio(part: float, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{report['dataset']}: {report['answerable']} answerable + {report['unanswerable']} left-out questions, "
             f"{report['documents']} PDFs / {report['chunks']} chunks (ingest {report['ingest_s']} s)"]
    keys = ("em", "f1", "contains", "citation_precision", "highlight_rate", "highlight_gold_page", "abstention",
            "false_abstention", "ttft_ms_first", "ttft_ms_p50", "ttft_ms_mean", "tokens_per_s", "errors")
    for name, scores in report["backends"].items():
        lines.append(f"\n{name}")
        if "error" in scores:
            lines.append(f"  unavailable: {scores['error']}")
            continue
        lines.extend(f"  {key:<20} {scores.get(key)}" for key in keys)
    return "\n".join(lines)

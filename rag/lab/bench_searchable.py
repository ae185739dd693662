"""``python -m rag.lab bench searchable``: how soon a long report is searchable, how fast it is embedded,
and whether embedding gets in a question's way.

Each phase ingests the report (default: the 183-page annual report) into a fresh temporary library
(fresh embedding cache) with the real embedders, as the app's ingest queue does: keywords first, then
vectors from the background embedder. It prints:

- seconds from the start of the ingest until a BM25 search for a phrase of the report finds the chunk
  holding it (polled every 20 ms by another thread), and the stage times before it;
- seconds until every vector is stored, and chunks/s over the embedding;
- with ``questions``: the same while a second thread asks ``--questions`` questions in a loop through
  the app's query engine (real embedders; ``--llm fake`` answers instantly, ``--llm 0.5b`` runs the
  bundled Qwen2.5-0.5B), with each question's time to sources (``sources_ms``: from ``stream()`` until
  the numbered sources are ready) and the chunks/s embedded while the questions were being asked;
- ``before``: the same questions against embedding as it was before the priority: batches of 32
  texts under the one engine lock that queries share, no waiting for questions. The ratio of the two
  time-to-sources medians is the benchmark's answer to "does embedding still slow a question down".

Run it under ``flock /tmp/citewise-cpu.lock``; the load average is printed with every phase.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from rag.config import RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT
from rag.lab.bench_embed import REPORT
from rag.lab.searchable_fakes import InstantLLM, single_handle_router

QUESTIONS = ("建新股份2019年的营业收入是多少？", "公司的主要产品有哪些？", "报告期内公司的研发投入是多少？",
             "公司的控股股东是谁？", "2019年归属于上市公司股东的净利润是多少？", "公司有多少名员工？")
PHASES = ("idle", "questions", "before")


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench searchable")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--file", default=REPORT, help="a PDF under --data-root")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated, of {', '.join(PHASES)}")
    parser.add_argument("--llm", choices=["fake", "0.5b"], default="fake")
    parser.add_argument("--think-s", type=float, default=1.0, help="pause between two questions")
    parser.add_argument("--questions", type=int, default=0, help="questions per phase (0: until embedded)")
    parser.add_argument("--batch", type=int, default=0, help="background batch size (default: the app's)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(config, args.data_root / args.file, [p for p in args.phases.split(",") if p], args.llm,
                 args.think_s, args.batch, args.questions)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_report(report))
    return 0


def run(config: RagConfig, pdf: Path, phases: list[str], llm_kind: str, think_s: float, batch: int,
        questions: int = 0) -> dict:
    from rag.ingest.vector_fill import BATCH
    from rag.runtime import build_router

    data = pdf.read_bytes()
    phrase = report_phrase(pdf, config)
    router = build_router(config)
    old_router = single_handle_router(config) if "before" in phases else None
    for r in (router, old_router):
        if r is not None:  # load and warm the models outside the timed region
            for spec in r.specs():
                r.for_spec(spec).get_text_embedding_batch(["warm up"])
    llm = _llm(config, llm_kind)
    results = []
    for phase in phases:
        before = phase == "before"
        results.append(run_phase(phase, config, old_router if before else router, data, pdf.name, phrase, llm,
                                 ask=phase != "idle", before=before, batch=32 if before else (batch or BATCH),
                                 think_s=think_s, questions=questions))
    report = {"file": pdf.name, "phrase": phrase, "llm": llm_kind, "think_s": think_s, "phases": results}
    timed = {p["phase"]: p for p in results if p.get("sources_ms")}
    if "before" in timed and "questions" in timed:
        report["sources_ratio_p50"] = round(timed["before"]["sources_ms_p50"] / timed["questions"]["sources_ms_p50"], 2)
        report["sources_ratio_max"] = round(max(timed["before"]["sources_ms"]) / max(timed["questions"]["sources_ms"]), 2)
    return report


def run_phase(phase: str, config: RagConfig, router: Any, data: bytes, name: str, phrase: str, llm: Any, *,
              ask: bool, before: bool, batch: int, think_s: float, questions: int = 0) -> dict:
    from rag.answer.engine import CitewiseQueryEngine
    from rag.answer.llm_runner import LLMRunner
    from rag.index.store import DocumentStore
    from rag.ingest.background import BackgroundEmbedder
    from rag.ingest.ingestor import Ingestor
    from rag.models.priority import Priority

    with tempfile.TemporaryDirectory(prefix="citewise-bench-searchable-") as tmp:
        cfg = replace(config, storage=replace(config.storage, data_dir=tmp, chroma_mode="embedded"))
        store = DocumentStore(cfg, router)
        priority = Priority(enabled=not before)
        embedder = BackgroundEmbedder(store, batch_size=batch, priority=priority, resume=False)
        engine = CitewiseQueryEngine.from_config(cfg, store, LLMRunner(llm, backend="embedded"), priority=priority)
        stop, found = threading.Event(), {}
        asked: list[dict] = []
        probe = threading.Thread(target=_probe, args=(store, phrase, found, stop), daemon=True)
        window: dict[str, tuple[float, int]] = {}
        doc: dict[str, str] = {}

        def done_now() -> int:  # chunks of the report embedded so far
            progress = embedder.progress(doc["id"]) if doc else None
            return progress.view().done if progress is not None else 0

        asker = threading.Thread(target=_ask, args=(engine, asked, stop, think_s, questions, window, done_now),
                                 daemon=True)
        load_before = _loadavg()
        started = time.perf_counter()
        found["t0"] = started
        probe.start()
        result = Ingestor(store, cfg, background=embedder, priority=priority).ingest_bytes(data, name)
        doc["id"] = result.doc_id
        handed = time.perf_counter()
        if ask:
            asker.start()
        probe.join(timeout=60)
        embedder.wait(result.doc_id, timeout=3600)
        embedded = time.perf_counter()
        stop.set()
        if ask:
            asker.join(timeout=600)
        fill = embedder.result(result.doc_id)
        embedder.close()
        store.close()
    during = [q for q in asked if q["asked_at"] < embedded]
    seconds = embedded - started - result.timings.get("searchable", 0.0)
    out = {"phase": phase, "status": fill.status if fill else result.status, "pages": result.pages,
           "chunks": result.chunks, "batch": batch, "stage_s": {k: round(v, 2) for k, v in result.timings.items()},
           "searchable_s": round(found["at"] - started, 2) if "at" in found else None,
           "ingest_returned_s": round(handed - started, 2), "embedded_s": round(embedded - started, 2),
           "chunks_per_s": round(result.chunks / seconds, 2) if seconds > 0 else None,
           "waited_for_questions_s": round(priority.waited_s, 1), "questions": len(during),
           "load_before": load_before, "load_after": _loadavg()}
    if "start" in window and "end" in window and window["end"][0] > window["start"][0]:
        (t0, n0), (t1, n1) = window["start"], window["end"]
        out["questions_window_s"] = round(t1 - t0, 1)
        out["chunks_per_s_while_asked"] = round((n1 - n0) / (t1 - t0), 2)
    if during:
        out["sources_ms"] = [q["sources_ms"] for q in during]
        out["sources_ms_p50"] = round(median(out["sources_ms"]), 1)
        out["answer_s_p50"] = round(median(q["answer_s"] for q in during), 2)
    return out


def report_phrase(pdf: Path, config: RagConfig) -> str:
    """A phrase from the middle of the report that BM25 can find (a run of CJK text of one prose chunk).

    Prose, not a table: a cell whose text wraps onto two lines in the PDF is one run only in the table
    pass's Markdown, so a phrase from a table cell measures the table pass, not the first searchable pass.
    """
    from rag.ingest.chunking import chunk_document
    from rag.ingest.parse import parse_file

    chunks = chunk_document(parse_file(pdf), "0" * 16, config.chunking)
    for chunk in chunks[len(chunks) // 2:]:
        if chunk.kind == "table":
            continue
        run = "".join(ch if "\u4e00" <= ch <= "\u9fff" else " " for ch in chunk.text).split()
        longest = max(run, key=len, default="")
        if len(longest) >= 12:
            return longest[:12]
    raise ValueError(f"{pdf.name}: no 12-character Chinese phrase found")


def _probe(store: Any, phrase: str, found: dict, stop: threading.Event) -> None:
    while not stop.is_set() and time.perf_counter() - found["t0"] < 60:
        hits = store.keywords.search(phrase, 3)
        if hits and phrase in "".join(c.text for c in store.keywords.get([h.chunk_id for h in hits]).values()):
            found["at"] = time.perf_counter()
            return
        time.sleep(0.02)


def _ask(engine: Any, asked: list[dict], stop: threading.Event, think_s: float, limit: int,
         window: dict, embedded: Any) -> None:
    number = 0
    window["start"] = (time.perf_counter(), embedded())
    while not stop.is_set() and (not limit or number < limit):
        question = f"{QUESTIONS[number % len(QUESTIONS)]}（{number}）"  # distinct: no cached query vector
        number += 1
        started = time.perf_counter()
        stream = engine.stream(question)
        result = stream.result()
        asked.append({"asked_at": started, "sources_ms": result.timings.get("sources_ms", 0.0),
                      "answer_s": time.perf_counter() - started})
        stop.wait(think_s)
    window["end"] = (time.perf_counter(), embedded())


def _llm(config: RagConfig, kind: str) -> Any:
    if kind == "fake":
        return InstantLLM()
    from rag.config import DEFAULT_HOME
    from rag.models.llms import load_embedded_llm

    llm_config = replace(config.llm, embedded_model="qwen2.5-0.5b-instruct")
    return load_embedded_llm(llm_config, config.generation, DEFAULT_HOME)


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def format_report(report: dict) -> str:
    lines = [f"{report['file']}: phrase {report['phrase']!r}, LLM {report['llm']}, {report['think_s']} s between "
             "questions", "",
             "| phase | batch | pages | chunks | keyword-searchable | fully embedded | chunks/s | questions during "
             "embedding | time to sources p50 / max | load before → after |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in report["phases"]:
        sources = (f"{p['sources_ms_p50'] / 1000:.2f} s / {max(p['sources_ms']) / 1000:.2f} s"
                   if p.get("sources_ms") else "–")
        lines.append(f"| {p['phase']} | {p['batch']} | {p['pages']} | {p['chunks']} | {p['searchable_s']} s | "
                     f"{p['embedded_s']} s | {p['chunks_per_s']} | {p['questions']} | {sources} | "
                     f"{p['load_before']} → {p['load_after']} |")
    for p in report["phases"]:
        stages = ", ".join(f"{k} {v} s" for k, v in p["stage_s"].items())
        asked = (f"; while {p['questions']} questions were asked ({p['questions_window_s']} s): "
                 f"{p['chunks_per_s_while_asked']} chunks/s, answers p50 {p['answer_s_p50']} s"
                 if "chunks_per_s_while_asked" in p and p.get("questions") else "")
        lines.append(f"{p['phase']}: {stages}; embedding waited {p['waited_for_questions_s']} s for questions"
                     + asked)
    if "sources_ratio_p50" in report:
        lines.append(f"time to sources, before / after: p50 x{report['sources_ratio_p50']}, "
                     f"max x{report['sources_ratio_max']}")
    return "\n".join(lines)

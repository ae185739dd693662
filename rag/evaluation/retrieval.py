"""``python -m rag eval``: retrieval quality of any pipeline mode on BEIR / SQuAD / CMRC2018 / CSV sets.

Each corpus document is indexed as one chunk (its title and text) in a store of its own, built once
into ``$CITEWISE_HOME/eval/`` and reused; the ranking of a query is the list of document ids of the
retrieved chunks. Queries run through the same query engine the app uses, assembled once per mode
from the mode's config (``retrieval.sources`` picks BM25 alone, vectors alone, or both).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.answer.engine import CitewiseQueryEngine
from rag.config import DEFAULT_HOME, MAX_CONTEXT_TOKENS, RagConfig
from rag.documents import Chunk
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, EvalDataset, document_text, load_dataset
from rag.evaluation.metrics import aggregate, latency_percentiles
from rag.index.store import DocumentStore
from rag.ingest.embedding import EMBEDDING_TEXT_VERSION, embed_chunks
from rag.retrieval.query import QueryError
from rag.retrieval.query_rewrite import QueryEnhancer
from rag.text.language import detect_language

logger = logging.getLogger(__name__)

BASE_MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "bm25": {"retrieval.sources": "keyword"},
    "vector": {"retrieval.sources": "vector"},
    # each dense list of an English question alone (the second English embedder's, e5-small, and the English one's)
    "vector-english-model": {"retrieval.sources": "vector", "retrieval.second_vector_weight": 0.0},
    "vector-second-model": {"retrieval.sources": "vector", "retrieval.vector_weight": 0.0},
    "hybrid-rrf": {"retrieval.sources": "hybrid", "retrieval.fusion": "rrf"},
    "hybrid-weighted": {"retrieval.sources": "hybrid", "retrieval.fusion": "weighted"},
}
EXTENSIONS: dict[str, dict[str, Any]] = {
    "rerank": {"rerank.enabled": True},
    "mmr": {"mmr.enabled": True},
    "rewrite": {"query.rewrite": True},
    "hyde": {"query.hyde": True},
}
LLM_EXTENSIONS = {"rewrite", "hyde"}
LLM_SAMPLE = 50
EVAL_DEPTH = 20  # rankings are cut at 20 for recall@20


def all_modes() -> list[str]:
    modes = list(BASE_MODES)
    modes += [f"{base}+{ext}" for base in ("bm25", "vector", "hybrid-rrf", "hybrid-weighted") for ext in EXTENSIONS]
    return modes


def mode_settings(mode: str, config: RagConfig) -> tuple[RagConfig, bool]:
    """The config of ``mode`` and whether it needs an LLM."""
    base, *extensions = mode.split("+")
    if base not in BASE_MODES or any(e not in EXTENSIONS for e in extensions):
        raise ValueError(f"unknown mode {mode!r}; known: {', '.join(all_modes())}")
    overrides: dict[str, Any] = dict(BASE_MODES[base])
    if base != "default":
        # an ablation row has exactly the stages it names, whatever the app's defaults turn on
        overrides.update({"rerank.enabled": False, "mmr.enabled": False, "query.rewrite": False,
                          "query.hyde": False, "reflection.enabled": False})
    for extension in extensions:
        overrides.update(EXTENSIONS[extension])
    # rank deep enough for recall@20, and never let the LLM context budget cut a ranking (the largest budget
    # a config allows, 131072 tokens, holds EVAL_DEPTH chunks of up to 6,000 tokens each)
    overrides["retrieval.top_k"] = EVAL_DEPTH
    overrides["retrieval.candidate_k"] = max(config.retrieval.candidate_k, EVAL_DEPTH)
    overrides["generation.max_context_tokens"] = MAX_CONTEXT_TOKENS
    if "rerank" in extensions and not config.rerank.model_path:
        raise ValueError(f"mode {mode} needs a cross-encoder: set rerank.model_path (python -m rag.lab.train_reranker "
                         "trains one on the SciFact train split)")
    if "rerank" in extensions or (base == "default" and config.rerank.enabled):
        overrides["rerank.candidates"] = max(config.rerank.candidates, EVAL_DEPTH)
        overrides["rerank.top_n"] = EVAL_DEPTH
    return config.with_overrides(overrides), bool(LLM_EXTENSIONS & set(extensions))


class ModeEngines:
    """One query engine per evaluated mode over one eval store, sharing the models and the LLM's rewrites.

    Args:
        store: The eval store.
        llm: The LLM runner for LLM modes, or None.
        reranker: The cross-encoder for rerank modes, or None.
    """

    def __init__(self, store: DocumentStore, llm: Any = None, reranker: Any = None) -> None:
        self.store, self.llm, self.reranker = store, llm, reranker
        self._engines: dict[RagConfig, CitewiseQueryEngine] = {}
        self._enhancers: dict[Any, QueryEnhancer] = {}

    def engine(self, config: RagConfig) -> CitewiseQueryEngine:
        if config not in self._engines:
            enhancer = None
            if self.llm is not None:  # rewrite / HyDE output for a query is made once, for every mode
                enhancer = self._enhancers.setdefault(config.query, QueryEnhancer.from_config(self.llm.llm, config.query))
            self._engines[config] = CitewiseQueryEngine.from_config(config, self.store, self.llm,
                                                                    reranker=self.reranker, enhancer=enhancer)
        return self._engines[config]


def eval_store(dataset: EvalDataset, config: RagConfig, router, *, home: Path = DEFAULT_HOME,
               report: Any = None) -> DocumentStore:
    """A store holding ``dataset.corpus``, built once per (corpus, embedding config) and reused.

    ``report(stage, fraction, message)`` receives embedding progress while building (the app's
    progress bar); without it progress goes to stderr for the CLI.
    """
    fingerprint = hashlib.sha256(json.dumps(
        [sorted(dataset.corpus)[:50], len(dataset.corpus), repr(config.embedding), EMBEDDING_TEXT_VERSION]
    ).encode()).hexdigest()[:12]
    folder = home / "eval" / f"{dataset.name}-{fingerprint}"
    store_config = replace(config, storage=replace(config.storage, data_dir=str(folder), chroma_mode="embedded",
                                                   collection="eval"))
    store = DocumentStore(store_config, router)
    marker = folder / "ready.json"
    if marker.exists() and json.loads(marker.read_text()).get("documents") == len(dataset.corpus):
        return _with_saved_graphs(store, store_config, router)
    logger.warning("indexing %d %s documents into %s (once)", len(dataset.corpus), dataset.name, folder)
    started = time.perf_counter()
    chunks = [corpus_chunk(doc_id, entry) for doc_id, entry in dataset.corpus.items()]

    def progress(stage: str, fraction: float, message: str) -> None:
        print(f"\r  {message}", end="", file=sys.stderr)

    store.write_chunks(embed_chunks(store, chunks, report=report or progress))
    if report is None:
        print(file=sys.stderr)
    marker.write_text(json.dumps({"documents": len(dataset.corpus), "seconds": time.perf_counter() - started}))
    return _with_saved_graphs(store, store_config, router)


def _with_saved_graphs(store: DocumentStore, config: RagConfig, router) -> DocumentStore:
    """``store``, reopened once its Chroma graphs are saved whole, so every run searches the same graph."""
    with store.writing("saving the vector graphs"):
        if not store.vectors.save_graphs_on_open():
            return store
    store.close()
    return DocumentStore(config, router)  # opening replays Chroma's log once more, and now saves the graph


def corpus_chunk(doc_id: str, entry: dict[str, str]) -> Chunk:
    text = document_text(entry)
    return Chunk(chunk_id=f"{doc_id}#0", doc_id=doc_id, file_name=entry.get("title", "") or doc_id, text=text,
                 index=0, page_start=1, page_end=1, char_start=0, char_end=len(text),
                 language=detect_language(text))


def evaluate(dataset: EvalDataset, engines: ModeEngines, config: RagConfig, mode: str, *,
             limit: int | None = None, progress: Any = None, batch_query_embeddings: bool = False) -> dict[str, Any]:
    """Metrics of ``mode`` on ``dataset``.

    With ``batch_query_embeddings`` the query vectors are computed in batches up front, which makes
    large runs several times faster but leaves the embedding out of the per-query latency (the
    report says so); ``bench query`` measures latency with it included.
    """
    mode_config, needs_llm = mode_settings(mode, config)
    note = ""
    if needs_llm and engines.llm is None:
        raise ValueError(f"mode {mode} needs an LLM (query rewrite / HyDE)")
    engine = engines.engine(mode_config)
    if needs_llm and (limit is None or limit > LLM_SAMPLE):
        limit = LLM_SAMPLE
        note = f"LLM mode: ran on a random sample of {LLM_SAMPLE} queries (seed 0)"
    if limit:
        dataset = dataset.subset(limit)
        note = note or f"ran on a random sample of {len(dataset.queries)} queries (seed 0)"
    if batch_query_embeddings:
        engines.store.router.prime_queries(engines.store.vectors.model_ids(), list(dataset.queries.values()))
    runs: dict[str, list[str]] = {}
    latencies: list[float] = []
    fallbacks: dict[str, int] = {}
    rejected = 0
    for i, (qid, query) in enumerate(dataset.queries.items()):
        started = time.perf_counter()
        try:
            result = engine.search(query)
        except QueryError as exc:  # one bad question is a miss, never the end of the run
            logger.warning("question %s rejected: %s", qid, exc)
            rejected += 1
            continue
        latencies.append((time.perf_counter() - started) * 1000)
        runs[qid] = list(dict.fromkeys(n.node.metadata["doc_id"] for n in result.nodes))[:EVAL_DEPTH]
        for stage in result.trace.fallback_reasons:
            fallbacks[stage] = fallbacks.get(stage, 0) + 1
        if progress:
            progress(i + 1, len(dataset.queries))
    metrics = aggregate(runs, {q: dataset.qrels.get(q, {}) for q in dataset.queries})
    skipped = dict(dataset.skipped)
    if rejected:
        skipped["rejected by the pipeline (counted as misses)"] = rejected
    note = "; ".join(p for p in (note, replace(dataset, skipped=skipped).skipped_note()) if p)
    return {
        "dataset": dataset.name,
        "split": dataset.split or "all",
        "mode": mode,
        "n_queries": len(dataset.queries),
        "skipped": skipped,
        "metrics": {k: round(v, 4) for k, v in metrics.items()},
        "latency_ms": {k: round(v, 2) for k, v in latency_percentiles(latencies).items()},
        "note": note + ("; " if note and batch_query_embeddings else "")
        + ("query embeddings batched up front: latency excludes query embedding" if batch_query_embeddings else ""),
        "fallbacks": fallbacks,
    }


def evaluate_grid(dataset: EvalDataset, engines: ModeEngines, config: RagConfig, modes: list[str], *,
                  limit: int | None = None, batch_query_embeddings: bool = False,
                  progress: Any = None) -> list[dict[str, Any]]:
    """``evaluate`` for each of ``modes`` over one store.

    The modes share the store's query-vector cache (each query is embedded once for all modes) and the
    LLM's rewrite / HyDE output. ``progress(mode, done, total)`` is called after each query.
    """
    reports = []
    for mode in modes:
        logger.warning("evaluating %s on %s", mode, dataset.name)
        step = (lambda done, total, mode=mode: progress(mode, done, total)) if progress else None
        reports.append(evaluate(dataset, engines, config, mode, limit=limit, progress=step,
                                batch_query_embeddings=batch_query_embeddings))
    return reports


def format_grid_markdown(reports: list[dict[str, Any]]) -> str:
    """One Markdown table, a row per (dataset, mode) report, notes and fallbacks listed under it."""
    if not reports:
        return ""
    keys = list(reports[0]["metrics"])
    lines = ["| dataset | mode | queries | " + " | ".join(keys) + " | p50 ms | p95 ms | p99 ms |",
             "|" + "---|" * (len(keys) + 6)]
    notes: list[str] = []
    parts = [[p for p in report.get("note", "").split("; ") if p] for report in reports]
    shared = [p for p in parts[0] if all(p in other for other in parts)]  # said once, under the table
    for report, own in zip(reports, parts):
        lat = report["latency_ms"]
        marks = ""
        extra = [p for p in own if p not in shared] + [f"fallback in {stage} x{count}"
                                                       for stage, count in report.get("fallbacks", {}).items()]
        if extra:
            notes.append(f"{report['dataset']} / {report['mode']}: " + "; ".join(extra))
            marks = f" [{len(notes)}]"
        lines.append(f"| {report['dataset']} | {report['mode']}{marks} | {report['n_queries']} | "
                     + " | ".join(f"{report['metrics'][k]:.3f}" for k in keys)
                     + f" | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} |")
    if notes or shared:
        lines.append("")
    lines.extend(f"All rows: {note}." for note in shared)
    lines.extend(f"[{i}] {note}" for i, note in enumerate(notes, start=1))
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    metrics = report["metrics"]
    header = "| dataset | mode | queries | " + " | ".join(metrics) + " | p50 ms | p95 ms | p99 ms |"
    rule = "|" + "---|" * (len(metrics) + 6)
    lat = report["latency_ms"]
    row = (f"| {report['dataset']} | {report['mode']} | {report['n_queries']} | "
           + " | ".join(f"{v:.3f}" for v in metrics.values())
           + f" | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} |")
    lines = [header, rule, row]
    if report.get("note"):
        lines.append(f"\n{report['note']}")
    if report.get("fallbacks"):
        lines.append("fallbacks: " + ", ".join(f"{k} x{v}" for k, v in report["fallbacks"].items()))
    return "\n".join(lines)


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag eval")
    parser.add_argument("--dataset", required=True, help="scifact, squad, cmrc2018, or a BEIR folder / SQuAD json / CSV")
    parser.add_argument("--mode", default="default", help="; ".join(all_modes()))
    parser.add_argument("--all-modes", action="store_true", help="run every mode (the ablation grid) on one pipeline")
    parser.add_argument("--modes", default=None, help="a comma-separated list of modes to run as a grid")
    parser.add_argument("--limit", type=int, default=None, help="evaluate a random sample of N queries")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--split", default=None,
                        help="which questions: train / test (BEIR qrels), tune / report (halves by article of "
                             "SQuAD-style sets), all; default: test for BEIR, all otherwise (docs/retrieval-protocol.md)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table (the default without --json)")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown table to this file")
    parser.add_argument("--batch-embed", action="store_true",
                        help="embed all queries in batches first (faster; latency then excludes embedding)")
    args = parser.parse_args(argv)

    from rag.runtime import build_llm_handle, build_llm_runner, build_reranker, build_router

    modes = all_modes() if args.all_modes else ([m.strip() for m in args.modes.split(",") if m.strip()]
                                                 if args.modes else [args.mode])
    try:
        dataset = load_dataset(args.dataset, args.data_root, split=args.split)
        needs_llm = any(mode_settings(mode, config)[1] for mode in modes)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    router = build_router(config)
    store = eval_store(dataset, config, router)
    llm = build_llm_runner(config, build_llm_handle(config)) if needs_llm else None
    wants_rerank = config.rerank.enabled or any("rerank" in m.split("+") for m in modes)
    reranker = build_reranker(config.with_overrides({"rerank.enabled": True})) if (
        wants_rerank and config.rerank.model_path) else None
    reports = evaluate_grid(dataset, ModeEngines(store, llm, reranker), config, modes, limit=args.limit,
                            batch_query_embeddings=args.batch_embed)
    table = format_grid_markdown(reports) if len(reports) > 1 else format_markdown(reports[0])
    if args.out:
        args.out.write_text(table + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, ensure_ascii=False))
    else:
        print(table)
    return 0

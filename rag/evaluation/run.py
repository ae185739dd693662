"""Retrieval evaluation for the app: one settings run with progress, per-query recall curves and latencies.

``rag.evaluation.retrieval.evaluate`` reports aggregates for the CLI; the Evaluation page also needs
per-query recall@1..20, every latency, progress, and CSV sets scored against the user's library. Both
share ``mode_settings`` (rank 20 deep, no budget cut) and ``eval_store`` (a corpus indexed once).

Two kinds of question set:
- corpus sets (BEIR, SQuAD, CMRC 2018): indexed in a store of their own; a ranking is document ids;
- CSV sets (``question, expected_document, expected_page``): questions run against the user's
  document store. ``expected_document`` is a file name (or a document id); a retrieved chunk is a
  hit when it belongs to that document and covers one of the expected pages (any page when none is
  given). Relevance is binary per question, so precision is not reported for CSV sets.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, NAMED_DATASETS, EvalDataset
from rag.evaluation.metrics import aggregate, latency_percentiles, per_query
from rag.evaluation.retrieval import EVAL_DEPTH, LLM_SAMPLE, eval_store, mode_settings
from rag.answer.engine import CitewiseQueryEngine
from rag.index.store import DocumentStore
from rag.retrieval.query import QueryError

logger = logging.getLogger(__name__)

Progress = Callable[[float, str], None]  # fraction done (0..1), message
CURVE_KS: tuple[int, ...] = tuple(range(1, EVAL_DEPTH + 1))
CORPUS_KS: dict[str, tuple[int, ...]] = {"ndcg": (10,), "recall": (1, 5, 10, 20), "mrr": (10,), "p": (5,)}
CSV_KS: dict[str, tuple[int, ...]] = {"ndcg": (10,), "recall": (1, 5, 10, 20), "mrr": (10,)}
HIT = "\x00hit"  # the one relevant "document" of a CSV question; cannot clash with a chunk id
EVAL_HOME = DEFAULT_HOME  # the eval indexes live in <EVAL_HOME>/eval (tests point this elsewhere)


@dataclass
class EvalRun:
    """One settings run over one question set.

    Args:
        label: The settings' name (e.g. "Current settings", a preset name).
        dataset: The question set's name.
        n_queries: Questions asked.
        metrics: Mean metrics (``ndcg@10``, ``recall@1..20``, ``mrr@10``, ``p@5``) plus
            ``recall@top_k``: recall at the settings' own ``retrieval.top_k`` (what the chat sees).
        recall_curve: Mean recall@k for k = 1..20.
        per_query_recall: qid -> recall@k for k = 1..20.
        latencies_ms: Retrieval time of each question, in order.
        latency: p50 / p95 / p99 of ``latencies_ms``.
        top_k: The settings' ``retrieval.top_k``.
        notes: Anything that qualifies the numbers (sampling, missing documents, fallbacks).
        fallbacks: Stage name -> how many questions degraded there.
    """

    label: str
    dataset: str
    n_queries: int
    metrics: dict[str, float]
    recall_curve: list[float]
    per_query_recall: dict[str, list[float]]
    latencies_ms: list[float]
    latency: dict[str, float]
    top_k: int
    notes: list[str] = field(default_factory=list)
    fallbacks: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "dataset": self.dataset, "n_queries": self.n_queries,
                "metrics": self.metrics, "recall_curve": self.recall_curve, "latency_ms": self.latency,
                "latencies_ms": self.latencies_ms, "top_k": self.top_k, "notes": self.notes,
                "fallbacks": self.fallbacks, "per_query_recall": self.per_query_recall}


def is_csv_set(dataset: EvalDataset) -> bool:
    """CSV question sets have no corpus of their own: they are scored against the user's library."""
    return not dataset.corpus


def bundled_datasets(data_root: str | Path | None = None) -> dict[str, Path | None]:
    """Each bundled set's name -> its path under ``data_root``, or None when it is absent."""
    root = Path(data_root or os.environ.get("RAG_EVAL_DATA") or DEFAULT_DATA_ROOT)
    return {name: (root / rel if (root / rel).exists() else None) for name, rel in NAMED_DATASETS.items()}


def corpus_store(dataset: EvalDataset, config: RagConfig, router: Any, *, home: Path | None = None,
                 progress: Progress | None = None) -> DocumentStore:
    """The evaluation store for a corpus set: built (embedded) once, then reused from disk.

    Args:
        dataset: A corpus set (BEIR / SQuAD / CMRC 2018).
        config: Supplies the embedding settings the index is built and cached for.
        router: The embedder router (the app's cached models).
        home: Cache root; the index goes to ``<home>/eval/<name>-<fingerprint>``. Defaults to
            ``EVAL_HOME``.
        progress: Called with (fraction, message) while passages are embedded.
    """
    home = Path(home or EVAL_HOME)

    def report(stage: str, fraction: float, message: str) -> None:
        if progress:
            progress(fraction, f"Building the evaluation index once (cached in {home / 'eval'}): {message}")

    return eval_store(dataset, config, router, home=home, report=report)


def run_settings(dataset: EvalDataset, store: DocumentStore, config: RagConfig, *, label: str,
                 limit: int | None = None, llm: Any = None, reranker: Any = None,
                 progress: Progress | None = None) -> EvalRun:
    """Evaluate ``config`` on ``dataset`` over ``store``; rankings go 20 deep.

    A fresh engine is assembled, so no result cached by an earlier run shortens a latency; one
    untimed warm-up query loads the models first.

    Args:
        dataset: The question set (a corpus set, or a CSV set scored against ``store``).
        store: The evaluation store of a corpus set, or the user's store for a CSV set.
        config: The settings to evaluate.
        label: Shown next to the numbers.
        limit: Ask a reproducible random sample of this many questions. Defaults to all. Settings
            that need the LLM (query rewrite, HyDE) are capped at 50 questions, as in the CLI.
        llm: The ``LLMRunner`` for query rewrite / HyDE / reflection; without it those stages fall back
            and say so.
        reranker: The cross-encoder when rerank is on.
        progress: Called with (fraction, message) after each question.
    """
    run_config, _ = mode_settings("default", config)
    notes: list[str] = []
    needs_llm = config.query.rewrite or config.query.hyde
    if needs_llm and llm is not None and (limit is None or limit > LLM_SAMPLE):
        limit = LLM_SAMPLE
        notes.append(f"query rewrite / HyDE use the LLM: ran on a sample of {LLM_SAMPLE} questions")
    if needs_llm and llm is None:
        notes.append("query rewrite / HyDE are on but no LLM was loaded: those stages fell back to the raw query")
    if limit and limit < len(dataset.queries):
        dataset = dataset.subset(limit)
        notes.append(f"a random sample of {len(dataset.queries)} questions (seed 0)")
    if dataset.skipped:
        notes.append(f"{dataset.skipped_note()} (left out of every metric)")
    csv_set = is_csv_set(dataset)
    gold = _csv_gold(dataset, store, notes) if csv_set else {}
    qrels = {q: {HIT: 1} for q in dataset.queries} if csv_set else {q: dataset.qrels.get(q, {}) for q in dataset.queries}

    questions = [(qid, text) for qid, text in dataset.queries.items() if text.strip()]
    if len(questions) < len(dataset.queries):
        notes.append(f"{len(dataset.queries) - len(questions)} empty question(s) count as misses")
    for _, question in questions[:3]:  # load the embedders outside the timed loop, on a question it accepts
        with contextlib.suppress(QueryError):
            CitewiseQueryEngine.from_config(run_config, store, llm, reranker=reranker).search(question)
            break
    engine = CitewiseQueryEngine.from_config(run_config, store, llm, reranker=reranker)
    runs: dict[str, list[str]] = {}
    latencies: list[float] = []
    fallbacks: dict[str, int] = {}
    rejected: dict[str, int] = {}
    for number, (qid, question) in enumerate(questions, start=1):
        started = time.perf_counter()
        try:
            result = engine.search(question)
        except QueryError as exc:  # e.g. over the length limit: a miss, not a crashed run
            rejected[str(exc)[:60]] = rejected.get(str(exc)[:60], 0) + 1
            continue
        latencies.append((time.perf_counter() - started) * 1000)
        metadata = [n.node.metadata for n in result.nodes]
        if csv_set:
            runs[qid] = [HIT if _is_hit(m, gold.get(qid)) else str(m.get("chunk_id", "")) for m in metadata]
        else:
            runs[qid] = list(dict.fromkeys(str(m["doc_id"]) for m in metadata))[:EVAL_DEPTH]
        for stage in result.trace.fallback_reasons:
            fallbacks[stage] = fallbacks.get(stage, 0) + 1
        if progress:
            progress(number / len(questions), f"{label}: question {number}/{len(questions)}")

    metrics = aggregate(runs, qrels, CSV_KS if csv_set else CORPUS_KS)
    curves = per_query(runs, qrels, {"recall": CURVE_KS})
    per_query_recall = {q: [scores[f"recall@{k}"] for k in CURVE_KS] for q, scores in curves.items()}
    curve = [float(np.mean([r[i] for r in per_query_recall.values()])) if per_query_recall else 0.0
             for i in range(len(CURVE_KS))]
    top_k = config.retrieval.top_k
    metrics["recall@top_k"] = curve[min(top_k, EVAL_DEPTH) - 1] if curve else 0.0
    if top_k > EVAL_DEPTH:
        notes.append(f"top-k is {top_k}; rankings are cut at {EVAL_DEPTH}, so recall@top_k is recall@{EVAL_DEPTH}")
    if rejected:
        notes.append(f"{sum(rejected.values())} question(s) rejected by the engine count as misses: "
                     + ", ".join(f"{reason} x{count}" for reason, count in rejected.items()))
    if fallbacks:
        notes.append("degraded stages: " + ", ".join(f"{stage} x{count}" for stage, count in fallbacks.items()))
    return EvalRun(label=label, dataset=dataset.name, n_queries=len(dataset.queries),
                   metrics={k: round(v, 4) for k, v in metrics.items()},
                   recall_curve=[round(v, 4) for v in curve], per_query_recall=per_query_recall,
                   latencies_ms=[round(v, 3) for v in latencies],
                   latency={k: round(v, 2) for k, v in latency_percentiles(latencies).items()},
                   top_k=top_k, notes=notes, fallbacks=fallbacks)


def index_settings(config: RagConfig, index_config: RagConfig) -> RagConfig:
    """``config`` with ``index_config``'s chunking, embedding and storage.

    A second preset is compared on the index that exists: its chunking and embedding would need a
    re-index, so only its retrieval, fusion, rerank, MMR, query and generation settings take part.
    """
    return replace(config, chunking=index_config.chunking, embedding=index_config.embedding,
                   storage=index_config.storage)


def latency_histogram(runs: Sequence[EvalRun], bins: int = 20) -> tuple[list[str], dict[str, list[int]]]:
    """Bin labels (ms) and each run's counts, on bins shared by all runs so their bars line up.

    One slow outlier (a cold cache, a GC pause) would squeeze every other question into the first
    bin, so latencies above the 99th percentile go into one overflow bin ("≥ X") when they lie far
    beyond it.
    """
    values = np.asarray([v for run in runs for v in run.latencies_ms], dtype=float)
    if values.size == 0:
        return [], {run.label: [] for run in runs}
    top = float(np.percentile(values, 99))
    overflow = values.size >= 20 and values.max() > 1.25 * top and top > values.min()
    edges = np.histogram_bin_edges(values[values <= top] if overflow else values, bins=bins)
    if overflow:
        edges = np.append(edges, values.max())
    decimals = 0 if edges[-1] - edges[0] >= 10 * bins else 1 if edges[-1] - edges[0] >= bins else 2
    labels = [f"{lo:.{decimals}f}–{hi:.{decimals}f}" for lo, hi in zip(edges[:-2], edges[1:-1])]
    labels.append(f"≥ {edges[-2]:.{decimals}f}" if overflow else f"{edges[-2]:.{decimals}f}–{edges[-1]:.{decimals}f}")
    return labels, {run.label: [int(c) for c in np.histogram(run.latencies_ms, bins=edges)[0]] for run in runs}


def metrics_table(runs: Sequence[EvalRun]) -> dict[str, dict[str, float]]:
    """metric -> {run label -> value}, including latency percentiles, for a side-by-side table."""
    table: dict[str, dict[str, float]] = {}
    for run in runs:
        for key, value in run.metrics.items():
            table.setdefault(key, {})[run.label] = value
        for key, value in run.latency.items():
            table.setdefault(f"latency {key} (ms)", {})[run.label] = value
    return table


def _csv_gold(dataset: EvalDataset, store: DocumentStore, notes: list[str]) -> dict[str, tuple[set[str], set[int]]]:
    """qid -> (doc ids the expected document names, expected pages); unknown names are noted."""
    by_name: dict[str, set[str]] = {}
    completed = {r.doc_id: r for r in store.documents() if r.status == "completed"}
    for record in completed.values():
        by_name.setdefault(record.file_name.strip().lower(), set()).add(record.doc_id)
    gold: dict[str, tuple[set[str], set[int]]] = {}
    missing: set[str] = set()
    for qid in dataset.queries:
        wanted = next(iter(dataset.qrels.get(qid, {})), "").strip()
        doc_ids = by_name.get(Path(wanted).name.lower(), set()) | ({wanted} if wanted in completed else set())
        if not doc_ids:
            missing.add(wanted or "(empty)")
        gold[qid] = (doc_ids, set(dataset.gold_pages.get(qid, [])))
    if missing:
        notes.append(f"{len(missing)} expected document(s) are not in your library (their questions count as "
                     f"misses): {', '.join(sorted(missing)[:5])}{' …' if len(missing) > 5 else ''}")
    return gold


def _is_hit(metadata: Mapping[str, Any], gold: tuple[set[str], set[int]] | None) -> bool:
    if not gold or metadata.get("doc_id") not in gold[0]:
        return False
    pages = gold[1]
    if not pages:
        return True
    start = int(metadata.get("page_start") or 0)
    end = int(metadata.get("page_end") or start)
    return any(start <= page <= end for page in pages)


"""``python -m rag bench sources``: time from ``CitewiseQueryEngine.stream()`` to numbered sources, at 10k chunks.

The issue's target: the sources appear within 1 s of asking (before the answer streams) on a 10k-chunk
index. The index is the query benchmark's (``rag.lab.bench_query``: real SQuAD dev text in ~60-word
chunks, embedded with the bundled English model, embeddings cached across runs). Each distinct
question goes through ``stream()`` — query embedding, vector + BM25 search, fusion, postprocessing,
context budget counted with the answering model's own tokenizer, numbering the sources — and the
clock stops when ``stream()`` returns with ``sources`` set. No token is generated (the LLM is loaded
only for its tokenizer, which the budget uses).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from rag.lab.bench_query import _fill_real
from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, load_squad
from rag.evaluation.metrics import latency_percentiles


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag bench sources", description=__doc__.split("\n")[0])
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--no-llm", action="store_true",
                        help="count the budget in words instead of loading the model's tokenizer")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(config, args.data_root, args.queries, args.chunks, with_llm=not args.no_llm)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        lat = report["sources_ms"]
        print(f"{report['chunks']} chunks, {report['queries']} questions, budget counted with "
              f"{report['token_counter']}: sources ready p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms, "
              f"p99 {lat['p99']:.1f} ms, max {report['max_ms']:.1f} ms; {report['over_1s']} over 1 s")
    return 0


def run(config: RagConfig, data_root: Path, queries: int, chunks: int, *, with_llm: bool = True) -> dict:
    from rag.evaluation.answers import answer_engine
    from rag.index.store import DocumentStore
    from rag.models.llms import load_embedded_llm
    from rag.runtime import build_router

    squad = load_squad(data_root / "squad-v1.1-dev.json")
    questions = random.Random(1).sample(sorted(squad.queries.values()), queries)
    llm = load_embedded_llm(config.llm, config.generation, DEFAULT_HOME) if with_llm else None
    router = build_router(config)
    with tempfile.TemporaryDirectory(prefix="citewise-bench-sources-") as tmp:
        store = DocumentStore(replace(config, storage=replace(config.storage, data_dir=tmp,
                                                              chroma_mode="embedded")), router)
        started = time.perf_counter()
        _fill_real(store, squad, chunks)
        build_s = time.perf_counter() - started
        engine = answer_engine(config, store, llm if llm is not None else _NoLLM(), "embedded")
        engine.stream("warm up the models and caches")
        latencies, counts = [], []
        for question in questions:
            started = time.perf_counter()
            stream = engine.stream(question)
            latencies.append((time.perf_counter() - started) * 1000)
            counts.append(len(stream.sources))
        store.close()
    return {"chunks": chunks, "queries": len(questions), "build_s": round(build_s, 1),
            "token_counter": f"{config.llm.embedded_model} tokenizer" if llm is not None else "words",
            "max_context_tokens": config.generation.max_context_tokens,
            "sources_ms": {k: round(v, 1) for k, v in latency_percentiles(latencies).items()},
            "max_ms": round(max(latencies), 1), "over_1s": sum(v > 1000 for v in latencies),
            "mean_sources": round(sum(counts) / len(counts), 2)}


class _NoLLM:
    """Stands in for the LLM when only retrieval is timed (never called: stream() does not generate)."""

"""``python -m rag bench query``: latency of the non-LLM retrieval stages at 10k and 100k chunks.

The 10k index holds real text: SQuAD dev paragraphs cut into chunks of about 60 words, embedded with
the bundled English model. The 100k index is synthetic: the same real queries against random unit
vectors and word soup drawn from the SQuAD paragraphs' own word frequencies (so BM25 posting
lists are as long as real text makes them), which costs the same to search as real data of that
size.
Every query is distinct and the result cache is bypassed, so each one pays for its query embedding,
Chroma search, BM25 scoring, fusion and postprocessing.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag.config import DEFAULT_HOME, RagConfig
from rag.documents import Chunk
from rag.models.embedding_router import model_id_of
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, load_squad
from rag.evaluation.metrics import latency_percentiles
from rag.index.embed_cache import EmbeddingCache
from rag.ingest.embedding import embed_chunks
from rag.runtime import build_router
from rag.index.store import DocumentStore

logger = logging.getLogger(__name__)


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag bench query")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated index sizes")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    squad = load_squad(args.data_root / "squad-v1.1-dev.json")
    queries = random.Random(0).sample(sorted(squad.queries.values()), args.queries)
    router = build_router(config)
    reports = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
            store_config = replace(config, storage=replace(config.storage, data_dir=tmp, chroma_mode="embedded"))
            store = DocumentStore(store_config, router)
            started = time.perf_counter()
            kind = _fill_real(store, squad, size) if size <= 20_000 else _fill_synthetic(store, squad, size)
            build_seconds = time.perf_counter() - started
            reports.append(_measure(store, config, queries, size, kind, build_seconds))
            store.close()
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        for r in reports:
            stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stage_p95_ms"].items())
            print(f"{r['chunks']:>7} chunks ({r['kind']}, built in {r['build_s']:.0f}s): {r['queries']} queries, "
                  f"p50 {r['latency_ms']['p50']:.1f} ms, p95 {r['latency_ms']['p95']:.1f} ms, "
                  f"p99 {r['latency_ms']['p99']:.1f} ms\n    per-stage p95 ms: {stages}")
    return 0


def _fill_real(store: DocumentStore, squad, size: int) -> str:
    texts: list[str] = []
    for entry in squad.corpus.values():
        words = entry["text"].split()
        texts.extend(" ".join(words[i:i + 60]) for i in range(0, len(words), 45))
    while len(texts) < size:  # SQuAD dev gives ~12k chunks; repeat with a marker if more are asked for
        texts.extend(f"{t} ({len(texts)})" for t in texts[: size - len(texts)])
    texts = texts[:size]
    # a shared embedding cache makes reruns of the benchmark cheap
    shared_cache = EmbeddingCache(DEFAULT_HOME / "eval" / "bench-embed-cache.sqlite3")
    chunks = [Chunk(chunk_id=f"d{i // 20}:{i % 20}", doc_id=f"d{i // 20}", file_name=f"d{i // 20}.txt", text=t,
                    index=i % 20, page_start=1, page_end=1, char_start=0, char_end=len(t))
              for i, t in enumerate(texts)]
    store.write_chunks(embed_chunks(store, chunks, cache=shared_cache))
    return "real SQuAD text"


def _fill_synthetic(store: DocumentStore, squad, size: int) -> str:
    rng = np.random.default_rng(0)
    counts: dict[str, int] = {}
    for entry in squad.corpus.values():
        for word in entry["text"].split():
            counts[word] = counts.get(word, 0) + 1
    vocabulary = np.array(list(counts))
    weights = np.array(list(counts.values()), dtype=np.float64)
    weights /= weights.sum()
    chunks = []
    for i in range(size):
        text = " ".join(rng.choice(vocabulary, size=60, p=weights))
        chunks.append(Chunk(chunk_id=f"s{i // 50}:{i % 50}", doc_id=f"s{i // 50}", file_name=f"s{i // 50}.txt",
                            text=text, index=i % 50, page_start=1, page_end=1, char_start=0, char_end=len(text)))
    by_model = {}
    for spec in store.router.specs_for("en"):  # every English model searches its own space, so each gets vectors
        embedder = store.router.for_spec(spec)
        dimension = len(embedder.get_query_embedding("dimension"))
        vectors = rng.normal(size=(size, dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        by_model[model_id_of(embedder)] = (chunks, vectors)
    store.write_chunks(by_model)
    return "synthetic vectors and text"


def _measure(store: DocumentStore, config: RagConfig, queries: list[str], size: int, kind: str,
             build_seconds: float) -> dict:
    from rag.runtime import build_engine

    # the app's engine as configured (with the cross-encoder when rerank is on, so its cost is part of
    # the figure); retrieval only, and every query is distinct, so no result comes from the cache
    engine = build_engine(config, store=store, with_llm=False)
    engine.search("warm up the models and caches")
    latencies: list[float] = []
    stage_ms: dict[str, list[float]] = {}
    for query in queries:
        started = time.perf_counter()
        result = engine.search(query)
        latencies.append((time.perf_counter() - started) * 1000)
        for stage in result.trace.stages:
            stage_ms.setdefault(stage.name, []).append(stage.duration_ms)
    return {
        "chunks": size, "kind": kind, "build_s": round(build_seconds, 1), "queries": len(queries),
        "latency_ms": {k: round(v, 2) for k, v in latency_percentiles(latencies).items()},
        "stage_p95_ms": {k: round(float(np.percentile(v, 95)), 2) for k, v in stage_ms.items()},
    }

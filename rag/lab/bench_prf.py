"""``python -m rag.lab.bench_prf``: what pseudo-relevance feedback adds to a question's search time.

Dense feedback costs, per question, fetching the top-m passages' vectors from Chroma, the Rocchio step
and one more Chroma search; keyword feedback costs tokenizing the top-m passages, choosing the terms and
one more BM25 scoring. Both are timed over 10,000 passages: the cached MiniLM vectors of the SQuAD and
SciFact corpora (7,250 real passages) filled up with jittered copies of real vectors (and the same
passages' text), in a Chroma collection configured as the app's (cosine HNSW), and the app's BM25
scoring (``BM25Replay.scores``). Questions are distinct SQuAD ``tune`` questions. Prints p50 / p95 / p99
in ms beside the first dense search's, and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rag.evaluation.datasets import DEFAULT_DATA_ROOT, document_text
from rag.evaluation.metrics import latency_percentiles
from rag.evaluation.sets import EvalDataset
from rag.lab.prf import expansion_terms, rocchio
from rag.lab.replay import BM25Replay, BM25Setting, dense_vectors
from rag.lab.tune_ensemble import LazyEmbedder
from rag.lab.tune_fusion import split_questions, with_all_questions
from rag.text.tokenizer import tokenize

SPEC = "bundled:minilm"


def passages(data_root: Path, size: int, questions: int, seed: int) -> tuple[np.ndarray, list[str], np.ndarray, dict]:
    """(vectors, texts, question vectors, qid -> question) of ``size`` passages: real ones, then jittered copies."""
    rng = np.random.default_rng(seed)
    sets = [with_all_questions(name, data_root) for name in ("squad", "scifact")]
    vectors = [dense_vectors(s, SPEC, LazyEmbedder(SPEC)) for s in sets]
    texts = [document_text(s.corpus[d]) for s, v in zip(sets, vectors) for d in v.doc_ids]
    corpus = np.concatenate([v.corpus for v in vectors])
    picks = rng.integers(0, len(corpus), size=max(0, size - len(corpus)))
    jitter = corpus[picks] + rng.normal(0, 0.02, size=(len(picks), corpus.shape[1])).astype(np.float32)
    corpus = np.concatenate([corpus, jitter / np.linalg.norm(jitter, axis=1, keepdims=True)])[:size]
    texts = (texts + [texts[i] for i in picks])[:size]
    tune = split_questions(sets[0], "tune", data_root)
    qids = [str(q) for q in rng.choice(list(tune.queries), size=questions, replace=False)]
    position = {q: i for i, q in enumerate(vectors[0].qids)}
    return corpus, texts, vectors[0].queries[[position[q] for q in qids]], {q: tune.queries[q] for q in qids}


def _ms(samples: list[float]) -> str:
    p = latency_percentiles(samples)
    return " / ".join(f"{p[k]:.2f}" for k in ("p50", "p95", "p99"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.bench_prf", description=__doc__.split("\n")[0])
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--m", type=int, default=3, help="feedback passages")
    parser.add_argument("--terms", type=int, default=10, help="keyword feedback: terms added")
    parser.add_argument("--candidates", type=int, default=20, help="hits per search (the default candidate_k)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    args = parser.parse_args(argv)
    import chromadb

    corpus, texts, query_vectors, questions = passages(args.data_root, args.passages, args.queries, args.seed)
    ids = [f"c{i}" for i in range(len(texts))]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {len(ids)} passages, {len(questions)} questions")
    with tempfile.TemporaryDirectory() as folder:
        client = chromadb.PersistentClient(path=folder)
        collection = client.create_collection("bench", embedding_function=None, metadata={"hnsw:space": "cosine"})
        for start in range(0, len(ids), 5000):
            collection.add(ids=ids[start:start + 5000], embeddings=corpus[start:start + 5000])
        first, dense_extra, firsts = [], [], []
        for vector in query_vectors:
            begin = time.perf_counter()
            hits = collection.query(query_embeddings=[vector], n_results=args.candidates)["ids"][0]
            first.append((time.perf_counter() - begin) * 1000)
            firsts.append(hits)
            begin = time.perf_counter()
            feedback = np.asarray(collection.get(ids=hits[:args.m], include=["embeddings"])["embeddings"])
            collection.query(query_embeddings=[rocchio(vector, feedback, 0.5)], n_results=args.candidates)
            dense_extra.append((time.perf_counter() - begin) * 1000)
    dataset = EvalDataset(name="bench", corpus={i: {"title": "", "text": t} for i, t in zip(ids, texts)},
                          queries=questions, qrels={})
    replayer, setting = BM25Replay(dataset), BM25Setting(0.5, 0.75, 0.5)
    keyword_first, keyword_extra = [], []
    # build the index, idf table and term matrix before timing (the app keeps its index in memory)
    warm = next(iter(replayer.query_tokens.values()))
    replayer.scores(warm, setting, {t: 0.1 for t in warm})
    replayer.idf()
    for qid, hits in zip(questions, firsts):
        tokens = replayer.query_tokens[qid]
        begin = time.perf_counter()
        replayer.top(replayer.scores(tokens, setting), args.candidates)
        keyword_first.append((time.perf_counter() - begin) * 1000)
        begin = time.perf_counter()
        feedback = [tokenize(texts[int(h[1:])]) for h in hits[:args.m]]
        extra = {t: 0.3 * w for t, w in expansion_terms(feedback, replayer.idf(), tokens, args.terms).items()}
        replayer.top(replayer.scores(tokens, setting, extra), args.candidates)
        keyword_extra.append((time.perf_counter() - begin) * 1000)
    print(f"ms p50 / p95 / p99 over {len(questions)} questions, {len(ids)} passages, m={args.m}:")
    for name, samples in ((f"first dense search (Chroma, k={args.candidates})", first),
                          (f"dense feedback extra (get {args.m} vectors, Rocchio, search)", dense_extra),
                          ("first BM25 search (the app's scoring, replayed)", keyword_first),
                          (f"keyword feedback extra (tokenize {args.m}, {args.terms} terms, search)", keyword_extra)):
        print(f"  {name:<64} {_ms(samples)}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

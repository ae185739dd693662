"""``python -m rag.lab.tune_fusion --dataset D``: measure fusion settings offline, to choose the defaults.

Each query's vector and BM25 candidate lists are retrieved once; every fusion setting is then
replayed on those lists, so a grid of dozens of settings costs one retrieval pass.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import sys
import time
from pathlib import Path

from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rag.config import load_config
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, load_dataset
from rag.evaluation.metrics import aggregate
from rag.evaluation.retrieval import eval_store
from rag.retrieval.fusion_scores import reciprocal_rank_fusion, weighted_score_fusion
from rag.retrieval.retrievers import KeywordRetriever, VectorRetriever
from rag.runtime import build_router

DEPTH = 50


def candidate_lists(dataset, store) -> dict[str, tuple[list[tuple[str, float]], list[tuple[str, float]]]]:
    store.router.prime_queries(store.vectors.model_ids(), list(dataset.queries.values()))
    vector = VectorRetriever(store.vectors, store.router, top_k=DEPTH)
    keyword = KeywordRetriever(store.keywords, top_k=DEPTH)
    lists = {}
    for i, (qid, query) in enumerate(dataset.queries.items()):
        bundle = QueryBundle(query)
        lists[qid] = tuple([(n.node.metadata["doc_id"], float(n.score)) for n in r.retrieve(bundle)]
                           for r in (vector, keyword))
        if i % 500 == 0:
            print(f"\r  retrieved {i}/{len(dataset.queries)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return lists


def _nodes(pairs: list[tuple[str, float]]) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(id_=doc_id, text=""), score=score) for doc_id, score in pairs]


def settings() -> list[tuple[str, dict]]:
    grid: list[tuple[str, dict]] = [("vector", {"only": 0}), ("bm25", {"only": 1})]
    for k, (wv, wk) in itertools.product((10, 30, 60), ((1, 1), (0.7, 0.3), (0.5, 1), (0.3, 0.7), (0.4, 1))):
        grid.append((f"rrf k={k} v={wv} kw={wk}", {"mode": "rrf", "k": k, "weights": [wv, wk]}))
    for norm, (wv, wk) in itertools.product(("minmax", "max"), ((0.7, 0.3), (0.5, 0.5), (0.4, 0.6), (0.3, 0.7),
                                                                 (0.2, 0.8))):
        grid.append((f"weighted {norm} v={wv} kw={wk}", {"mode": "weighted", "norm": norm, "weights": [wv, wk]}))
    return grid


def fuse(lists: tuple[list, list], setting: dict) -> list[str]:
    if "only" in setting:
        return [doc_id for doc_id, _ in lists[setting["only"]]]
    nodes = [_nodes(lists[0]), _nodes(lists[1])]
    if setting["mode"] == "rrf":
        fused = reciprocal_rank_fusion(nodes, k=setting["k"], weights=setting["weights"])
    else:
        fused = weighted_score_fusion(nodes, weights=setting["weights"], normalization=setting["norm"])
    return [n.node.node_id for n in fused]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.tune_fusion")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--lists", type=Path, help="save/load the retrieved candidate lists here (pickle)")
    args = parser.parse_args(argv)
    config = load_config()
    dataset = load_dataset(args.dataset, args.data_root)
    if args.limit:
        dataset = dataset.subset(args.limit)
    store = eval_store(dataset, config, build_router(config))
    started = time.perf_counter()
    if args.lists and args.lists.exists():
        lists = pickle.loads(args.lists.read_bytes())
    else:
        lists = candidate_lists(dataset, store)
        if args.lists:
            args.lists.write_bytes(pickle.dumps(lists))
    rows = []
    for name, setting in settings():
        runs = {qid: fuse(pair, setting)[:20] for qid, pair in lists.items()}
        metrics = aggregate(runs, {q: dataset.qrels.get(q, {}) for q in dataset.queries})
        rows.append({"setting": name, **{k: round(v, 4) for k, v in metrics.items()}})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        keys = ["ndcg@10", "recall@1", "recall@5", "recall@20", "mrr@10"]
        print(f"{dataset.name}: {len(dataset.queries)} queries, lists retrieved in {time.perf_counter() - started:.0f}s")
        print("| setting | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
        for row in rows:
            print(f"| {row['setting']} | " + " | ".join(f"{row[k]:.3f}" for k in keys) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

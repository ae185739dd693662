"""``python -m rag.lab.tune_fusion``: score retrieval settings by replaying cached candidate lists.

Only ever run on a tuning split (SciFact ``train``; the ``tune`` half of SQuAD / CMRC2018; see
docs/retrieval-protocol.md). It refuses a report split unless ``--allow-report-split`` is given,
which exists only to print the final figures of settings already chosen.

For each dataset, each question's dense list (per embedder) and BM25 list (per k1 / b / phrase
weight) are computed once (``rag.lab.replay``); each fusion setting is then replayed the way
``FusionRetriever`` fuses: both lists cut to ``candidate_k``, queries of at most
``short_query_tokens`` tokens keyword-only, the fused list cut to ``candidate_k``, ranked 20 deep.
The fast fusion here is checked against ``rag.retrieval.fusion`` by the unit tests.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from rag.evaluation.datasets import DEFAULT_DATA_ROOT, EvalDataset, load_dataset
from rag.evaluation.metrics import aggregate
from rag.lab.replay import BM25Replay, BM25Setting, Hits, dense_lists
from rag.text.language import count_tokens

EVAL_DEPTH = 20
REPORT_SPLITS = {"test", "report"}
PRIMARY = {"scifact": "ndcg@10", "squad": "mrr@10", "cmrc2018": "mrr@10", "cmrc2018-tw": "mrr@10"}


@dataclass(frozen=True)
class FusionSetting:
    """One way to fuse a dense and a BM25 list.

    Args:
        mode: ``vector``, ``bm25`` (one list alone), ``rrf`` or ``weighted``.
        vector_weight: Weight of the dense list (the BM25 list gets ``1 - vector_weight``).
        rrf_k: The RRF constant.
        normalization: ``minmax`` or ``max`` (weighted mode).
        candidate_k: How deep each list is read, and how many fused results are kept.
        coverage_below: Query-adaptive weighting (0 = off): when the top BM25 hit holds less than this
            IDF-weighted share of the question's tokens, the lexical evidence is weak (a question
            phrased unlike the text), and the dense list gets ``weak_lexical_weight`` instead.
        weak_lexical_weight: The vector weight used below ``coverage_below``.
    """

    mode: str
    vector_weight: float = 0.5
    rrf_k: int = 60
    normalization: str = "minmax"
    candidate_k: int = 30
    coverage_below: float = 0.0
    weak_lexical_weight: float = 0.6

    def label(self) -> str:
        if self.mode in ("vector", "bm25"):
            return f"{self.mode} only"
        extra = f"k={self.rrf_k}" if self.mode == "rrf" else self.normalization
        adaptive = (f" (v={self.weak_lexical_weight:.2f} when coverage<{self.coverage_below:.2f})"
                    if self.coverage_below else "")
        return f"{self.mode} {extra} v={self.vector_weight:.2f}{adaptive} depth={self.candidate_k}"

    def weight_for(self, coverage: float | None) -> float:
        """The vector weight for a question whose top BM25 hit has ``coverage`` (None: unknown)."""
        if self.coverage_below and coverage is not None and coverage < self.coverage_below:
            return self.weak_lexical_weight
        return self.vector_weight


def _normalize(scores: Sequence[float], method: str) -> list[float]:
    if not scores:
        return []
    if method == "max":
        high = max(scores)
        return [max(s, 0.0) / high if high > 0 else 0.0 for s in scores]
    low, high = min(scores), max(scores)
    return [(s - low) / (high - low) if high > low else (1.0 if s > 0 else 0.0) for s in scores]


def fuse(vector: Hits, bm25: Hits, setting: FusionSetting, *, short: bool = False,
         coverage: float | None = None) -> list[str]:
    """The fused ranking of one query, as ``FusionRetriever`` with ``setting`` ranks it.

    ``coverage`` is the top BM25 hit's share of the question's tokens, for adaptive settings.
    """
    k = setting.candidate_k
    vector, bm25 = vector[:k], [h for h in bm25[:k] if h[1] > 0]
    if setting.mode == "bm25" or (short and setting.mode != "vector"):
        return [d for d, _ in bm25]
    if setting.mode == "vector":
        return [d for d, _ in vector]
    weight = setting.weight_for(coverage)
    return fuse_lists([(vector, weight), (bm25, 1.0 - weight)], setting.mode, normalization=setting.normalization,
                      rrf_k=setting.rrf_k, candidate_k=k)


def fuse_lists(lists: Sequence[tuple[Hits, float]], mode: str, *, normalization: str = "minmax", rrf_k: int = 60,
               candidate_k: int = 30) -> list[str]:
    """Any number of (already cut) lists fused by ``mode`` (``rrf`` or ``weighted``), as the library fuses them.

    Args:
        lists: (hits, weight) per list; a list of weight <= 0 is left out.
        mode: ``rrf`` or ``weighted`` (normalised scores by ``normalization``).
        normalization: ``minmax`` or ``max`` (weighted mode).
        rrf_k: The RRF constant.
        candidate_k: How many fused ids are kept.
    """
    return [doc for doc, _ in fuse_scored(lists, mode, normalization=normalization, rrf_k=rrf_k,
                                          candidate_k=candidate_k)]


def fuse_scored(lists: Sequence[tuple[Hits, float]], mode: str, *, normalization: str = "minmax", rrf_k: int = 60,
                candidate_k: int = 30) -> Hits:
    """``fuse_lists`` with each fused document's score (the weighted sum it was ranked by).

    Args:
        lists: (hits, weight) per list; a list of weight <= 0 is left out.
        mode: ``rrf`` or ``weighted``.
        normalization: ``minmax`` or ``max`` (weighted mode).
        rrf_k: The RRF constant.
        candidate_k: How many fused hits are kept.
    """
    totals: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    order: dict[str, int] = {}
    for hits, weight in lists:
        if weight <= 0:
            continue
        if mode == "rrf":
            values = [weight / (rrf_k + rank) for rank in range(1, len(hits) + 1)]
        else:
            values = [weight * v for v in _normalize([s for _, s in hits], normalization)]
        seen: set[str] = set()
        for rank, ((doc, _), value) in enumerate(zip(hits, values), start=1):
            order.setdefault(doc, len(order))
            best_rank[doc] = min(best_rank.get(doc, rank), rank)
            if doc not in seen:
                seen.add(doc)
                totals[doc] = totals.get(doc, 0.0) + value
    ranked = sorted(totals, key=lambda d: (-totals[d], best_rank[d], order[d]))
    return [(doc, totals[doc]) for doc in ranked[:candidate_k]]


def replay(dataset: EvalDataset, vector: dict[str, Hits], bm25: dict[str, Hits], setting: FusionSetting,
           *, short_query_tokens: int = 2, coverage: dict[str, float] | None = None,
           slices: dict[str, set[str]] | None = None) -> dict[str, float]:
    """Mean metrics of ``setting`` over ``dataset``'s questions.

    Args:
        coverage: qid -> the top BM25 hit's IDF-weighted share of the question's tokens.
        slices: name -> qids; each slice's metrics are added as ``<name>:<metric>``.
    """
    runs = {}
    for qid, text in dataset.queries.items():
        short = count_tokens(text) <= short_query_tokens
        runs[qid] = fuse(vector.get(qid, []), bm25.get(qid, []), setting, short=short,
                         coverage=(coverage or {}).get(qid))[:EVAL_DEPTH]
    return score_runs(dataset, runs, slices)


def score_runs(dataset: EvalDataset, runs: dict[str, list[str]],
               slices: dict[str, set[str]] | None = None) -> dict[str, float]:
    """Mean metrics of ``runs`` (qid -> ranked ids) over ``dataset``'s questions, plus ``<slice>:<metric>``."""
    metrics = aggregate(runs, {q: dataset.qrels.get(q, {}) for q in dataset.queries})
    for name, qids in (slices or {}).items():
        part = aggregate({q: runs[q] for q in qids if q in runs}, {q: dataset.qrels.get(q, {}) for q in qids})
        metrics.update({f"{name}:{key}": value for key, value in part.items()})
    return metrics


def fusion_grid(depths: Sequence[int] = (30,), *, small: bool = False, adaptive: bool = False) -> list[FusionSetting]:
    """Both single lists, RRF and weighted fusion over a grid of weights and depths.

    Args:
        depths: ``candidate_k`` values.
        small: Only the single lists and min-max weighted fusion at five weights (for BM25 grids).
        adaptive: Only the single lists and min-max fusion with and without query-adaptive weights.
    """
    grid = [FusionSetting("vector"), FusionSetting("bm25")]
    if adaptive:
        return grid + [FusionSetting("weighted", base, candidate_k=d, coverage_below=below, weak_lexical_weight=weak)
                       for d in depths for base in (0.4, 0.45) for below in (0.0, 0.4, 0.5, 0.6)
                       for weak in ((0.5, 0.6, 0.7) if below else (0.6,))]
    if small:
        return grid + [FusionSetting("weighted", w, candidate_k=d) for d in depths for w in (0.3, 0.4, 0.5, 0.6, 0.7)]
    weights = [round(w, 2) for w in (0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)]
    for depth in depths:
        grid += [FusionSetting("rrf", w, rrf_k=k, candidate_k=depth) for k, w in itertools.product((10, 60), weights)]
        grid += [FusionSetting("weighted", w, normalization=n, candidate_k=depth)
                 for n, w in itertools.product(("minmax", "max"), weights)]
    return grid


def with_all_questions(name: str, data_root: Path) -> EvalDataset:
    """Every question of a named set (both splits), so one cache of vectors serves either split."""
    if name == "scifact":
        train, test = (load_dataset(name, data_root, split=s) for s in ("train", "test"))
        return replace(train, queries={**train.queries, **test.queries}, qrels={**train.qrels, **test.qrels}, split="")
    return load_dataset(name, data_root)


def split_questions(full: EvalDataset, split: str, data_root: Path) -> EvalDataset:
    """``full`` restricted to the questions of ``split``."""
    part = load_dataset(full.name, data_root, split=split)
    return replace(full, queries=part.queries, qrels=part.qrels, split=split)


def unlike_slice(dataset: EvalDataset, bm25_replay: BM25Replay, below: float = 0.4) -> set[str]:
    """Questions phrased unlike their passage: the gold passage holds under ``below`` of their IDF-weighted tokens.

    An analysis slice: the app cannot see the gold passage at query time.
    """
    return {q for q in dataset.queries
            if max((bm25_replay.coverage(q, d) for d in dataset.qrels[q] if dataset.qrels[q][d] > 0), default=1) < below}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.tune_fusion", description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True, help="scifact, squad, cmrc2018 or cmrc2018-tw")
    parser.add_argument("--split", required=True, help="train (SciFact) or tune (SQuAD, CMRC2018)")
    parser.add_argument("--embedder", default="bundled:minilm", help="the dense model spec")
    parser.add_argument("--k1", default="0.7", help="comma-separated BM25 k1 values")
    parser.add_argument("--b", default="0.75", help="comma-separated BM25 b values")
    parser.add_argument("--phrase-weight", default="0.5", help="comma-separated phrase weights")
    parser.add_argument("--depths", default="30", help="comma-separated candidate_k values")
    parser.add_argument("--small-grid", action="store_true", help="single lists and five min-max weights only")
    parser.add_argument("--adaptive-grid", action="store_true",
                        help="min-max fusion with query-adaptive weights (by the top BM25 hit's coverage)")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--allow-report-split", action="store_true",
                        help="only to print final figures of settings already chosen on a tuning split")
    parser.add_argument("--out", type=Path, help="write the rows as JSON lines here")
    args = parser.parse_args(argv)
    if args.split in REPORT_SPLITS and not args.allow_report_split:
        parser.error(f"{args.split} is a report split: choose settings on train / tune")
    from rag.models.embedders import build_embedder

    full = with_all_questions(args.dataset, args.data_root)
    dataset = split_questions(full, args.split, args.data_root)
    vector = dense_lists(full, args.embedder, build_embedder(args.embedder))
    bm25_replay = BM25Replay(full)
    floats = lambda text: [float(v) for v in text.split(",")]  # noqa: E731
    rows = []
    unlike = unlike_slice(dataset, bm25_replay)
    for k1, b, phrase in itertools.product(floats(args.k1), floats(args.b), floats(args.phrase_weight)):
        bm25 = bm25_replay.lists(BM25Setting(k1, b, phrase))
        coverage = {q: bm25_replay.coverage(q, hits[0][0]) for q, hits in bm25.items() if hits}
        for setting in fusion_grid([int(d) for d in args.depths.split(",")], small=args.small_grid,
                                   adaptive=args.adaptive_grid):
            metrics = replay(dataset, vector, bm25, setting, coverage=coverage, slices={"unlike": unlike})
            rows.append({"dataset": dataset.name, "split": args.split, "embedder": args.embedder, "k1": k1, "b": b,
                         "phrase_weight": phrase, "setting": setting.label(), **setting.__dict__,
                         **{m: round(v, 4) for m, v in metrics.items()}})
    primary = PRIMARY.get(dataset.name, "ndcg@10")
    print(f"{dataset.name} {args.split}: {len(dataset.queries)} questions ({len(unlike)} phrased unlike their "
          f"passage); best by {primary}:")
    for row in sorted(rows, key=lambda r: -r[primary])[:15]:
        print(f"  {row[primary]:.4f} (unlike {row.get('unlike:' + primary, 0):.4f})  k1={row['k1']} b={row['b']} "
              f"phrase={row['phrase_weight']}  {row['setting']}")
    singles = [r for r in rows if r["mode"] in ("vector", "bm25")]
    for row in singles[:2] if len(singles) <= 2 else singles:
        print(f"  single: {row[primary]:.4f} (unlike {row.get('unlike:' + primary, 0):.4f})  k1={row['k1']} b={row['b']} "
              f"phrase={row['phrase_weight']} {row['setting']}")
    if args.out:
        with args.out.open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    return 0 if all(not math.isnan(r[primary]) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

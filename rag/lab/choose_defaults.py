"""``python -m rag.lab.choose_defaults ROWS.jsonl ...``: one retrieval default for every set, by a fixed rule.

Reads the rows ``rag.lab.tune_fusion --out`` wrote (tuning splits only) and applies the protocol's
rule (docs/retrieval-protocol.md):

1. A candidate is a BM25 setting (k1, b, phrase weight) with a fusion setting, scored on every set.
2. It must be at least as good as the better single retriever on every set (BM25 alone with the
   same BM25 setting, or vector alone), within ``--tolerance`` of that set's primary metric
   (SciFact nDCG@10; SQuAD and CMRC2018 MRR@10).
3. Among those, the highest mean primary metric over the sets wins, except that candidates within
   ``--tie`` of that mean count as tied, and a tie goes to the smaller ``candidate_k`` (fewer
   candidates per query is less latency), then to the higher mean.

It prints the top candidates with their margin over the best single retriever on each set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from rag.lab.tune_fusion import PRIMARY

BM25_KEYS = ("k1", "b", "phrase_weight")
FUSION_KEYS = ("mode", "vector_weight", "rrf_k", "normalization", "candidate_k", "coverage_below", "weak_lexical_weight")
FUSION_DEFAULTS = {"coverage_below": 0.0, "weak_lexical_weight": 0.6}  # rows written before adaptive weighting


def load_rows(paths: list[Path]) -> list[dict]:
    rows = []
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            rows.extend(json.loads(line) for line in handle if line.strip())
    if any(row.get("split") in ("test", "report") for row in rows):
        raise ValueError("rows from a report split: defaults are chosen on tuning splits only")
    return rows


def choose(rows: list[dict], *, tolerance: float = 0.002, tie: float = 0.002) -> list[dict]:
    """Every fused candidate scored on all sets, the chosen one first (``chosen: True``), then best first.

    Each has ``eligible`` (never worse than the best single retriever on any set, within ``tolerance``),
    per-set ``metrics`` and ``margins`` over the best single retriever, and their ``mean``.
    """
    by_key: dict[tuple, dict[str, dict]] = defaultdict(dict)
    singles: dict[tuple, dict[str, float]] = defaultdict(dict)  # (dataset, bm25 setting) -> mode -> metric
    datasets = sorted({row["dataset"] for row in rows})
    for row in rows:
        bm25 = tuple(row[k] for k in BM25_KEYS)
        metric = row[PRIMARY.get(row["dataset"], "ndcg@10")]
        if row["mode"] in ("vector", "bm25"):
            singles[(row["dataset"], bm25)][row["mode"]] = metric
        else:
            by_key[bm25 + tuple(row.get(k, FUSION_DEFAULTS.get(k)) for k in FUSION_KEYS)][row["dataset"]] = row
    candidates = []
    for key, per_set in by_key.items():
        if set(per_set) != set(datasets):
            continue
        bm25 = key[:len(BM25_KEYS)]
        margins, metrics = {}, {}
        for name, row in per_set.items():
            metrics[name] = row[PRIMARY.get(name, "ndcg@10")]
            best_single = max(singles[(name, bm25)].values(), default=0.0)
            margins[name] = round(metrics[name] - best_single, 4)
        candidates.append({
            **dict(zip(BM25_KEYS + FUSION_KEYS, key)), "metrics": metrics, "margins": margins,
            "mean": round(sum(metrics.values()) / len(metrics), 4),
            "eligible": all(m >= -tolerance for m in margins.values()),
        })
    candidates.sort(key=lambda c: (not c["eligible"], -c["mean"], c["candidate_k"]))
    eligible = [c for c in candidates if c["eligible"]]
    if eligible:
        tied = [c for c in eligible if c["mean"] >= eligible[0]["mean"] - tie]
        chosen = min(tied, key=lambda c: (c["candidate_k"], -c["mean"]))
        chosen["chosen"] = True
        candidates.remove(chosen)
        candidates.insert(0, chosen)
    return candidates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.choose_defaults", description=__doc__.split("\n")[0])
    parser.add_argument("rows", nargs="+", type=Path, help="JSON lines from rag.lab.tune_fusion --out")
    parser.add_argument("--tolerance", type=float, default=0.002)
    parser.add_argument("--tie", type=float, default=0.002)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        candidates = choose(load_rows(args.rows), tolerance=args.tolerance, tie=args.tie)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for c in candidates[:args.top]:
        detail = ", ".join(f"{name} {c['metrics'][name]:.4f} ({c['margins'][name]:+.4f})" for name in sorted(c["metrics"]))
        print(f"{'CHOSEN' if c.get('chosen') else 'ok    ' if c['eligible'] else 'NO    '} mean {c['mean']:.4f}  k1={c['k1']} b={c['b']} "
              f"phrase={c['phrase_weight']} {c['mode']} {c['normalization'] if c['mode'] == 'weighted' else c['rrf_k']} "
              f"v={c['vector_weight']} depth={c['candidate_k']}"
              + (f" v={c['weak_lexical_weight']} below coverage {c['coverage_below']}" if c["coverage_below"] else "")
              + f"  |  {detail}")
    return 0 if candidates and candidates[0].get("chosen") else 1


if __name__ == "__main__":
    sys.exit(main())

"""``python -m rag.lab.tune_ensemble``: does a second dense retriever (e5-small beside MiniLM) lift fusion?

An experiment on tuning splits only (SciFact ``train``, the SQuAD ``tune`` half); report splits are
refused. Each question's BM25 list (k1 / b / phrase weight) and its two dense lists are the cached
replay lists of ``rag.lab.replay``; every setting is replayed by ``rag.lab.ensemble.fuse3``.

``--grid full`` prints the single lists, today's default, the best two-way fusion with each dense
model (``tune_fusion``'s grids), and the three-way families: weighted fusion on a simplex of weights,
RRF on the same simplex, the adaptive rule on the best weighted points, and "dense ensemble first";
then a paired bootstrap of the best three-way point against the default. ``--grid check`` replays
only the default, the singles and the settings read from ``--settings-from`` (rows written by a
``--grid full`` run), so the setting chosen on one set can be checked on another.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Iterable

from rag.config.search import RetrievalConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, EvalDataset
from rag.evaluation.metrics import per_query
from rag.lab.ensemble import EnsembleSetting, fuse3
from rag.lab.paired_bootstrap import paired_bootstrap
from rag.lab.replay import BM25Replay, BM25Setting, Hits, dense_lists
from rag.retrieval.adaptive import COVERAGE_BELOW, DENSE_SHIFT
from rag.lab.tune_fusion import (
    EVAL_DEPTH, PRIMARY, REPORT_SPLITS, FusionSetting, fusion_grid, replay, score_runs, split_questions,
    unlike_slice, with_all_questions,
)
from rag.text.language import count_tokens



def _app_default() -> FusionSetting:
    """The app's default fusion, read from its config and adaptive rule, so the baseline follows them."""
    retrieval = RetrievalConfig()
    vector_weight = retrieval.vector_weight / (retrieval.vector_weight + retrieval.keyword_weight)
    return FusionSetting(retrieval.fusion, vector_weight, rrf_k=retrieval.rrf_k, candidate_k=retrieval.candidate_k,
                         coverage_below=COVERAGE_BELOW, weak_lexical_weight=vector_weight + DENSE_SHIFT)


DEFAULT = _app_default()
DENSE = ("bundled:minilm", "bundled:e5-small")
SECOND_METRIC = {"scifact": "recall@10", "squad": "recall@5"}


class LazyEmbedder:
    """Builds the embedder only if ``dense_lists`` finds no cached vectors (loading e5 costs seconds)."""

    def __init__(self, spec: str) -> None:
        self._spec, self._model = spec, None

    def __getattr__(self, name: str):
        if self._model is None:
            from rag.models.embedders import build_embedder

            self._model = build_embedder(self._spec)
        return getattr(self._model, name)


def simplex(step: float) -> list[tuple[float, float, float]]:
    """Every (bm25, A, B) weight triple on a grid of ``step`` that sums to 1."""
    n = round(1 / step)
    return [(round(i * step, 4), round(j * step, 4), round((n - i - j) * step, 4))
            for i in range(n + 1) for j in range(n + 1 - i)]


def three_way_grid(depths: Iterable[int], step: float) -> list[EnsembleSetting]:
    """Weighted (min-max and max) and RRF (k 10 and 60) fusion of the three lists over the simplex."""
    grid = []
    for depth, weights in itertools.product(depths, simplex(step)):
        grid += [EnsembleSetting("weighted", weights, normalization=n, candidate_k=depth) for n in ("minmax", "max")]
        grid += [EnsembleSetting("rrf", weights, rrf_k=k, candidate_k=depth) for k in (10, 60)]
    return grid


def adaptive_grid(bases: Iterable[EnsembleSetting]) -> list[EnsembleSetting]:
    """The adaptive rule (coverage 0.4 / 0.5 / 0.6, shift 0.05-0.2) on top of each base setting."""
    return [EnsembleSetting(b.mode, b.weights, b.normalization, b.candidate_k, b.rrf_k, below, shift)
            for b in bases for below in (0.4, 0.5, 0.6) for shift in (0.05, 0.1, 0.15, 0.2)]


def dense_first_grid(depths: Iterable[int]) -> list[EnsembleSetting]:
    """Dense lists merged first (e5 share 0.3 / 0.5 / 0.7), then two-way fusion, fixed and adaptive."""
    grid = []
    for depth, bm25, share, norm in itertools.product(depths, (0.45, 0.5, 0.55, 0.6, 0.65), (0.3, 0.5, 0.7),
                                                      ("minmax", "max")):
        dense = 1.0 - bm25
        weights = (bm25, round(dense * (1 - share), 4), round(dense * share, 4))
        grid += [EnsembleSetting("dense-first", weights, norm, depth, coverage_below=below, dense_shift=0.1)
                 for below in (0.0, 0.4, 0.5, 0.6)]
    return grid


class Lists:
    """One split's questions with their BM25 list, both dense lists and BM25's top-hit coverage."""

    def __init__(self, dataset_name: str, split: str, data_root: Path, bm25: BM25Setting) -> None:
        full = with_all_questions(dataset_name, data_root)
        self.dataset: EvalDataset = split_questions(full, split, data_root)
        self.a, self.b = (dense_lists(full, spec, LazyEmbedder(spec)) for spec in DENSE)
        replayer = BM25Replay(full)
        self.bm25 = replayer.lists(bm25)
        self.coverage = {q: replayer.coverage(q, hits[0][0]) for q, hits in self.bm25.items() if hits}
        self.slices = {"unlike": unlike_slice(self.dataset, replayer)}
        self.short = {q for q, text in self.dataset.queries.items() if count_tokens(text) <= 2}

    def runs(self, setting: EnsembleSetting) -> dict[str, list[str]]:
        """qid -> the fused ranking under ``setting``."""
        return {q: fuse3(self.bm25.get(q, []), self.a.get(q, []), self.b.get(q, []), setting, short=q in self.short,
                         coverage=self.coverage.get(q))[:EVAL_DEPTH] for q in self.dataset.queries}

    def score(self, setting: EnsembleSetting) -> dict[str, float]:
        return score_runs(self.dataset, self.runs(setting), self.slices)

    def two_way(self, setting: FusionSetting, dense: dict[str, Hits]) -> dict[str, float]:
        return replay(self.dataset, dense, self.bm25, setting, coverage=self.coverage, slices=self.slices)

    def per_question(self, runs: dict[str, list[str]], metric: str) -> dict[str, float]:
        qrels = {q: self.dataset.qrels.get(q, {}) for q in self.dataset.queries}
        return {q: s[metric] for q, s in per_query(runs, qrels).items()}

    def default_runs(self) -> dict[str, list[str]]:
        """Today's default (two-way, MiniLM) as runs, through the same fusion path."""
        weights = (1.0 - DEFAULT.vector_weight, DEFAULT.vector_weight, 0.0)
        shift = DEFAULT.weak_lexical_weight - DEFAULT.vector_weight
        return self.runs(EnsembleSetting("weighted", weights, DEFAULT.normalization, DEFAULT.candidate_k,
                                         coverage_below=DEFAULT.coverage_below, dense_shift=shift))


def metrics_line(name: str, metrics: dict[str, float], primary: str, second: str) -> str:
    return (f"  {metrics[primary]:.4f}  {second} {metrics[second]:.4f}  (unlike {metrics.get('unlike:' + primary, 0):.4f}"
            f"; {second} {metrics.get('unlike:' + second, 0):.4f})  {name}")


def _baselines(lists: Lists, primary: str, second: str, rows: list[dict], full: bool) -> None:
    print("single lists and today's default:")
    for name, setting, dense in (("BM25 alone", FusionSetting("bm25"), lists.a),
                                 ("MiniLM alone", FusionSetting("vector"), lists.a),
                                 ("e5-small alone", FusionSetting("vector"), lists.b),
                                 (f"default (MiniLM) {DEFAULT.label()}", DEFAULT, lists.a)):
        print(metrics_line(name, lists.two_way(setting, dense), primary, second))
    if not full:
        return
    for spec, dense in zip(DENSE, (lists.a, lists.b)):
        scored = [(s, lists.two_way(s, dense)) for s in fusion_grid((20, 30)) + fusion_grid((20, 30), adaptive=True)
                  if s.mode not in ("vector", "bm25")]
        setting, metrics = max(scored, key=lambda sm: sm[1][primary])
        print(metrics_line(f"best two-way with {spec}: {setting.label()}", metrics, primary, second))
        rows.append({"family": f"two-way {spec}", "setting": setting.label(), **metrics})


def experiment_parser(prog: str, description: str, datasets: list[str], split_help: str, *,
                      top: int) -> argparse.ArgumentParser:
    """A lab experiment's parser with the dataset, split and ``--grid full|check`` arguments.

    Args:
        prog: The command, for usage lines.
        description: One line on what it does.
        datasets: The ``--dataset`` choices.
        split_help: Which splits it takes.
        top: The default of ``--top`` (rows replayed by ``--grid check``).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--dataset", required=True, choices=datasets)
    parser.add_argument("--split", required=True, help=split_help)
    parser.add_argument("--grid", choices=("full", "check"), default="full")
    parser.add_argument("--settings-from", type=Path, help="--grid check: rows of a --grid full run")
    parser.add_argument("--top", type=int, default=top, help="--grid check: how many of those rows (best first)")
    return parser


def parse_experiment_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser``'s arguments (from ``experiment_parser``) plus the BM25, bootstrap and data ones, checked.

    Report splits are refused, and ``--grid check`` without ``--settings-from``.
    """
    parser.add_argument("--k1", type=float, default=0.5)
    parser.add_argument("--b", type=float, default=0.75)
    parser.add_argument("--phrase-weight", type=float, default=0.5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    args = parser.parse_args(argv)
    if args.split in REPORT_SPLITS:
        parser.error(f"{args.split} is a report split: this experiment runs on train / tune only")
    if args.grid == "check" and not args.settings_from:
        parser.error("--grid check needs --settings-from")
    return args


def checked_rows(path: Path, top: int) -> list[dict]:
    """The ``top`` best setting rows of a ``--grid full`` run (by their set's primary metric), then the best
    of each family not among them."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = sorted((r for r in rows if "spec" in r), key=lambda r: -r[PRIMARY[r["dataset"]]])
    return rows[:top] + [next(r for r in rows if r["family"] == f) for f in sorted({r["family"] for r in rows})]


def main(argv: list[str] | None = None) -> int:
    parser = experiment_parser("python -m rag.lab.tune_ensemble", __doc__.split("\n")[0], sorted(SECOND_METRIC),
                               "train (SciFact) or tune (SQuAD)", top=10)
    parser.add_argument("--depths", default="20,30", help="comma-separated candidate_k values")
    parser.add_argument("--step", type=float, default=0.05, help="simplex step of the three weights")
    parser.add_argument("--out", type=Path, help="write the three-way rows as JSON lines here")
    args = parse_experiment_arguments(parser, argv)
    lists = Lists(args.dataset, args.split, args.data_root, BM25Setting(args.k1, args.b, args.phrase_weight))
    primary, second = PRIMARY[args.dataset], SECOND_METRIC[args.dataset]
    print(f"{args.dataset} {args.split}: {len(lists.dataset.queries)} questions ({len(lists.slices['unlike'])} "
          f"phrased unlike their passage); {primary}, {second}; A = MiniLM, B = e5-small")
    rows: list[dict] = []
    _baselines(lists, primary, second, rows, args.grid == "full")
    if args.grid == "check":
        settings = list(dict.fromkeys(_setting(r) for r in checked_rows(args.settings_from, args.top)))
    else:
        depths = [int(d) for d in args.depths.split(",")]
        settings = three_way_grid(depths, args.step) + dense_first_grid(depths)
    scored = [(s, lists.score(s)) for s in settings]
    if args.grid == "full":
        weighted = sorted((sm for sm in scored if sm[0].mode == "weighted"), key=lambda sm: -sm[1][primary])
        scored += [(s, lists.score(s)) for s in adaptive_grid(s for s, _ in weighted[:10])]
    for s, m in scored:
        family = f"{s.mode}{' adaptive' if s.coverage_below else ''}"
        rows.append({"family": family, "setting": s.label(), "spec": {**s.__dict__}, **m})
    _report(lists, [r for r in rows if "spec" in r], primary, second, args, ranked=args.grid == "full")
    if args.out:
        with args.out.open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps({"dataset": args.dataset, "split": args.split, **row}) + "\n")
    return 0


def _setting(row: dict) -> EnsembleSetting:
    return EnsembleSetting(**{**row["spec"], "weights": tuple(row["spec"]["weights"])})


def _report(lists: Lists, rows: list[dict], primary: str, second: str, args: argparse.Namespace, *,
            ranked: bool) -> None:
    """The best per family, the top 10 (or, checking, the given settings in their order) and the bootstrap.

    Args:
        ranked: Rank ``rows`` by ``primary`` (a grid); otherwise keep their order (settings chosen elsewhere).
    """
    order = sorted(rows, key=lambda r: -r[primary]) if ranked else rows
    if ranked:
        print("best three-way setting per family:")
        for family in sorted({r["family"] for r in rows}):
            best = next(r for r in order if r["family"] == family)
            print(metrics_line(best["setting"], best, primary, second))
    print(f"top {min(10, len(order))} settings:" if ranked else "the settings checked, in their given order:")
    shown = order[:10] if ranked else order
    for row in shown:
        print(metrics_line(row["setting"], row, primary, second))
    top = [r[primary] for r in shown]
    print(f"  spread of these: {min(top):.4f}-{max(top):.4f} ({max(top) - min(top):.4f})")
    default_runs = lists.default_runs()
    print(metrics_line("default, replayed through fuse3 (must equal the default above)",
                score_runs(lists.dataset, default_runs, lists.slices), primary, second))
    best = order[0]
    for metric in (primary, second):
        diff = paired_bootstrap(lists.per_question(lists.runs(_setting(best)), metric),
                                lists.per_question(default_runs, metric), resamples=args.resamples, seed=args.seed)
        print(f"paired bootstrap, {metric}, ({best['setting']}) - default over {diff.questions} questions "
              f"({args.resamples} resamples, seed {args.seed}): {diff.mean:+.4f}, 95% CI [{diff.low:+.4f}, "
              f"{diff.high:+.4f}], {diff.share_above_zero:.1%} of resamples > 0")


if __name__ == "__main__":
    sys.exit(main())

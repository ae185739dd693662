"""``python -m rag.lab.tune_prf``: does cheap pseudo-relevance feedback lift today's default fusion?

An experiment on tuning splits only (SciFact ``train``, the ``tune`` half of SQuAD / CMRC2018); report
splits are refused. Every setting is replayed by ``rag.lab.prf.PrfReplay`` from the cached lists and
vectors of ``rag.lab.replay``. Dense or keyword feedback costs one extra search per question, both two.

``--grid full`` prints the first pass (today's default, which must equal ``tune_ensemble``'s replay of
it), then the families: dense (Rocchio, m x beta, equal or cosine-weighted mean), keyword (RM3-style,
m x t x w), both (the five best of each, crossed), the five best points applied only where BM25's top
hit covers the question weakly (``feedback_below``), and the fusion weight and depth re-chosen on the
five best points overall; then a paired bootstrap of the best point against the default (the first pass).
``--three-way`` puts the feedback on top of the best three-way fusion of docs/retrieval-protocol.md
(BM25 / MiniLM / e5-small; e5's vectors must be in the lab cache to be cheap) instead, whose own
weights stay as chosen there (no fusion grid). ``--grid check`` replays only the first pass and the
settings read from ``--settings-from`` (rows of a ``--grid full`` run), so settings chosen on one set
are checked unchanged on another.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

from rag.lab.ensemble import EnsembleSetting
from rag.lab.paired_bootstrap import paired_bootstrap
from rag.lab.prf import PrfReplay, PrfSetting
from rag.lab.replay import BM25Setting
from rag.lab.tune_ensemble import metrics_line, checked_rows, experiment_parser, parse_experiment_arguments
from rag.lab.tune_fusion import PRIMARY, score_runs

SECOND_METRIC = {"scifact": "recall@10", "squad": "recall@5", "cmrc2018": "recall@1"}
EMBEDDER = {"scifact": "bundled:minilm", "squad": "bundled:minilm", "cmrc2018": "bundled:e5-small"}
# the best three-way point on SciFact train (docs/retrieval-protocol.md, "Two dense retrievers")
THREE_WAY = ("bundled:e5-small", EnsembleSetting("weighted", (0.5, 0.25, 0.25), "minmax", 30, coverage_below=0.5,
                                                 dense_shift=0.1))


def dense_grid() -> list[PrfSetting]:
    """Rocchio feedback: m in 1/2/3/5, beta in 0.1-1.0, equal or cosine-weighted mean."""
    return [PrfSetting(dense_m=m, beta=b, by_similarity=w)
            for m, b, w in itertools.product((1, 2, 3, 5), (0.1, 0.25, 0.5, 0.75, 1.0), (False, True))]


def keyword_grid() -> list[PrfSetting]:
    """RM3-style feedback: m in 1/2/3/5 passages, t in 5/10/20 terms, weight 0.2-1.0."""
    return [PrfSetting(keyword_m=m, terms=t, term_weight=w)
            for m, t, w in itertools.product((1, 2, 3, 5), (5, 10, 20), (0.2, 0.3, 0.5, 0.7, 1.0))]


def both_grid(dense: list[PrfSetting], keyword: list[PrfSetting]) -> list[PrfSetting]:
    """Each dense setting combined with each keyword setting."""
    return [replace(d, keyword_m=k.keyword_m, terms=k.terms, term_weight=k.term_weight) for d in dense for k in keyword]


def fusion_grid(bases: list[PrfSetting]) -> list[PrfSetting]:
    """Each base with the fusion's dense weight (0.35-0.55) and depth (20, 30) re-chosen."""
    return [replace(b, vector_weight=v, candidate_k=k)
            for b in bases for v in (0.35, 0.4, 0.45, 0.5, 0.55) for k in (20, 30)]


def _best(rows: list[tuple[PrfSetting, dict[str, float]]], primary: str, n: int) -> list[PrfSetting]:
    return [s for s, _ in sorted(rows, key=lambda sm: -sm[1][primary])[:n]]


def gate_grid(bases: list[PrfSetting]) -> list[PrfSetting]:
    """Each base applied only to questions whose BM25 top hit holds under 0.4-0.8 of their terms."""
    return [replace(b, feedback_below=x) for b in bases for x in (0.4, 0.5, 0.6, 0.7, 0.8)]


def run_grid(replay: PrfReplay, primary: str) -> list[tuple[PrfSetting, dict[str, float]]]:
    """Every family in turn: dense, keyword, both (five best of each), the five best gated by coverage, then
    fusion re-chosen on the five best (two-way fusion only: a three-way fusion keeps its weights)."""
    score = lambda settings: [(s, replay.score(s)) for s in settings]  # noqa: E731
    dense, keyword = score(dense_grid()), score(keyword_grid())
    both = score(both_grid(_best(dense, primary, 5), _best(keyword, primary, 5)))
    rows = dense + keyword + both
    rows += score(gate_grid(_best(rows, primary, 5)))
    if replay.ensemble:
        return rows
    seen = {s for s, _ in rows}
    return rows + score([s for s in dict.fromkeys(fusion_grid(_best(rows, primary, 5))) if s not in seen])


def read_settings(path: Path, top: int) -> list[PrfSetting]:
    """The settings of ``tune_ensemble.checked_rows`` of a ``--grid full`` run's rows."""
    rows = checked_rows(path, top)
    if not rows:
        raise ValueError(f"{path} holds no setting rows of a --grid full run")
    return list(dict.fromkeys(PrfSetting(**r["spec"]) for r in rows))


def report(replay: PrfReplay, rows: list[tuple[PrfSetting, dict[str, float]]], primary: str, second: str,
           args: argparse.Namespace, *, ranked: bool) -> None:
    """The best point per family, the top ten (or the checked settings in order) and the bootstrap of the first.

    Args:
        ranked: Rank ``rows`` by ``primary`` (a grid); otherwise keep their order (settings chosen elsewhere).
    """
    order = sorted(rows, key=lambda sm: -sm[1][primary]) if ranked else rows
    if ranked:
        print("best setting per family:")
        for family in ("dense", "keyword", "both"):
            picks = [sm for sm in order if sm[0].family() == family]
            best_default = next((sm for sm in picks if sm[0].fusion() == PrfSetting().fusion()), None)
            for name, sm in (("", picks[0] if picks else None), (" (default fusion)", best_default)):
                if sm:
                    print(metrics_line(f"[{family}{name}] {replay.label(sm[0])}", sm[1], primary, second))
    shown = order[:10] if ranked else order
    print(f"top {len(shown)} settings:" if ranked else "the settings checked, in their given order:")
    for setting, metrics in shown:
        print(metrics_line(replay.label(setting), metrics, primary, second))
    top = [m[primary] for _, m in shown]
    print(f"  spread of these: {min(top):.4f}-{max(top):.4f} ({max(top) - min(top):.4f})")
    best = shown[0][0]
    baselines = [("first pass", replay.runs(PrfSetting()))]
    if replay.ensemble:
        baselines.append(("today's default", replay.default_runs()))
    for (name, runs), metric in itertools.product(baselines, (primary, second)):
        diff = paired_bootstrap(replay.per_question(replay.runs(best), metric), replay.per_question(runs, metric),
                                resamples=args.resamples, seed=args.seed)
        print(f"paired bootstrap, {metric}, ({replay.label(best)}) - {name} over {diff.questions} questions "
              f"({args.resamples} resamples, seed {args.seed}): {diff.mean:+.4f}, 95% CI [{diff.low:+.4f}, "
              f"{diff.high:+.4f}], {diff.share_above_zero:.1%} of resamples > 0")


def main(argv: list[str] | None = None) -> int:
    parser = experiment_parser("python -m rag.lab.tune_prf", __doc__.split("\n")[0], sorted(SECOND_METRIC),
                               "train (SciFact) or tune (SQuAD, CMRC2018)", top=5)
    parser.add_argument("--embedder", help="the dense model spec (default: MiniLM for English, e5-small for CMRC2018)")
    parser.add_argument("--three-way", action="store_true", help="feedback on top of the best three-way fusion")
    parser.add_argument("--out", type=Path, help="write the rows as JSON lines here")
    args = parse_experiment_arguments(parser, argv)
    replay = PrfReplay(args.dataset, args.split, args.data_root, args.embedder or EMBEDDER[args.dataset],
                       BM25Setting(args.k1, args.b, args.phrase_weight), THREE_WAY if args.three_way else None)
    primary, second = PRIMARY[args.dataset], SECOND_METRIC[args.dataset]
    print(f"{args.dataset} {args.split}: {len(replay.qids)} questions ({len(replay.slices['unlike'])} phrased unlike "
          f"their passage); {primary}, {second}")
    base = (f"three-way {THREE_WAY[1].label()}" if args.three_way
            else f"today's default, {PrfSetting().fusion().label()}")
    print(metrics_line(f"first pass = {base}", replay.score(PrfSetting()), primary, second))
    if args.three_way:
        print(metrics_line(f"today's default, {PrfSetting().fusion().label()}",
                    score_runs(replay.dataset, replay.default_runs(), replay.slices), primary, second))
    if args.grid == "check":
        rows = [(s, replay.score(s)) for s in read_settings(args.settings_from, args.top)]
    else:
        rows = run_grid(replay, primary)
    report(replay, rows, primary, second, args, ranked=args.grid == "full")
    if args.out:
        with args.out.open("a", encoding="utf-8") as handle:
            for setting, metrics in rows:
                handle.write(json.dumps({"dataset": args.dataset, "split": args.split, "family": setting.family(),
                                         "base": "three-way" if args.three_way else "default",
                                         "setting": replay.label(setting), "spec": asdict(setting), **metrics}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

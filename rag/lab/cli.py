"""``python -m rag.lab``: benchmarks that print figures, and fitting the answerability gate.

Lab code measures and tunes; the app never imports it. Training and fusion tuning have their own
entry points (``python -m rag.lab.train_embedder``, ``rag.lab.train_reranker``, ``rag.lab.tune_fusion``,
``rag.lab.choose_defaults``).
"""

from __future__ import annotations

import argparse
import sys

from rag.cli.common import add_global_options, configure
from rag.config import RagConfig

BENCHMARKS = ("ingest", "llm", "query", "sources", "answer", "evidence", "load", "ocr", "tables", "docsignal",
              "embed", "searchable")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if extra and not getattr(args, "passes_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.rest = extra
    config = configure(args)
    if config is None:
        return 2
    return args.handler(args, config)


def _parser() -> argparse.ArgumentParser:
    from rag.lab.gate_calibration import add_command
    from rag.lab.trust_tuning import add_command as add_trust_tuning

    parser = argparse.ArgumentParser(prog="python -m rag.lab", description="Citewise benchmarks and calibration")
    add_global_options(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="benchmarks that print figures")
    bench.add_argument("what", choices=BENCHMARKS)
    bench.set_defaults(handler=_cmd_bench, passes_extra=True)
    add_command(commands)
    add_trust_tuning(commands)
    return parser


def _cmd_bench(args: argparse.Namespace, config: RagConfig) -> int:
    if args.what == "ingest":
        from rag.lab.bench_ingest import main as bench_ingest

        return bench_ingest(args.rest, config)
    if args.what == "embed":
        from rag.lab.bench_embed import main as bench_embed

        return bench_embed(args.rest, config)
    if args.what == "searchable":
        from rag.lab.bench_searchable import main as bench_searchable

        return bench_searchable(args.rest, config)
    if args.what == "query":
        from rag.lab.bench_query import main as bench_query

        return bench_query(args.rest, config)
    if args.what == "answer":
        from rag.lab.bench_answer import main as bench_answer

        return bench_answer(args.rest, config)
    if args.what in ("ocr", "tables", "docsignal"):
        from importlib import import_module

        return import_module(f"rag.lab.bench_{args.what}").main(args.rest, config)
    if args.what == "evidence":
        from rag.lab.bench_evidence import main as bench_evidence

        return bench_evidence(args.rest, config)
    if args.what == "load":
        from rag.lab.bench_load import main as bench_load

        return bench_load(args.rest, config)
    if args.what == "sources":
        from rag.lab.bench_sources import main as bench_sources

        return bench_sources(args.rest, config)
    from rag.lab.bench_llm import main as bench_llm

    return bench_llm(args.rest)

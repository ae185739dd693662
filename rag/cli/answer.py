"""``python -m rag ask`` and ``python -m rag eval-answers``.

Hooked into ``rag.cli.main`` with ``add_commands(commands)``; each handler is ``fn(args, config) -> int``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rag.config import RagConfig


def add_commands(subparsers: Any) -> None:
    """Register ``ask`` and ``eval-answers`` on the ``python -m rag`` sub-parsers."""
    ask = subparsers.add_parser("ask", help="answer a question from your documents, with cited pages")
    ask.add_argument("question")
    ask.add_argument("--doc", action="append", dest="doc_ids", metavar="ID", help="only these documents")
    ask.add_argument("--json", action="store_true", help="print the result object as JSON")
    ask.add_argument("--no-kb", action="store_true", help="answer without searching the documents")
    ask.add_argument("--search", choices=["always", "auto"], default="always",
                     help="auto: a tool-calling LLM decides whether to search (default: always)")
    ask.add_argument("--llm-check", action="store_true", help="also ask the LLM whether each cited sentence holds")
    ask.set_defaults(handler=cmd_ask)

    evaluate = subparsers.add_parser("eval-answers", help="answer quality on SQuAD / CMRC 2018 / a JSON file")
    evaluate.add_argument("--dataset", default="squad",
                          help="squad2, cjrc, ace-whqa, cuad (real unanswerables, paragraph in the library); "
                               "squad, cmrc2018 (unanswerables left out); broad, broad-holdout … broad-holdout11 "
                               "(summaries and comparisons over ../shared/data/pdfs), broad-named, broad-named2, "
                               "broad-named3, broad-named4 (questions that name their document, for --whole-library), "
                               "broad-unanswerable-dev, "
                               "-report, -holdout … -holdout6 (broad questions their document does not cover); "
                               "or a SQuAD-format JSON path")
    evaluate.add_argument("--split", choices=["tune", "report"], default=None,
                          help="the part of a real-unanswerable set (default report; tune thresholds on tune)")
    evaluate.add_argument("--rows", default=None, metavar="FILE", help="also write the report with every row here")
    evaluate.add_argument("--library", default=None, metavar="DIR",
                          help="broad sets: build the set's library in DIR and keep it; a later run of the same set "
                               "with the same DIR asks at once instead of ingesting the PDFs again")
    evaluate.add_argument("--whole-library", action="store_true",
                          help="broad sets: ask each question with no document selected, of everything in the "
                               "library (--library DIR may hold more PDFs than the set names); only citations of "
                               "the question's own PDF count toward support")
    evaluate.add_argument("--n", type=int, default=30, help="answerable questions (default 30)")
    evaluate.add_argument("--unanswerable", type=int, default=None,
                          help="questions whose paragraph is left out of the index (default n/3)")
    evaluate.add_argument("--distractors", type=int, default=3, help="distractor paragraphs per PDF (default 3)")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--also-server", action="store_true",
                          help="also evaluate the configured OpenAI-compatible server (llm.base_url)")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(handler=cmd_eval_answers)


def cmd_ask(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.models.llm_openai import LLMUnavailableError
    from rag.retrieval.query import QueryError
    from rag.runtime import build_engine

    try:
        engine = build_engine(config, search_mode=args.search, llm_groundedness=args.llm_check)
    except LLMUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        stream = engine.stream(args.question, doc_ids=args.doc_ids, use_knowledge_base=not args.no_kb)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.json:
        if stream.sources:
            print("Sources:")
            for source in stream.sources:
                print(f"  [{source.n}] {source.file_name} p.{_pages(source.page_start, source.page_end)}")
            print()
        for token in stream:
            sys.stdout.write(token)
            sys.stdout.flush()
        print()
    result = stream.result()
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2, default=str))
        return 1 if result.error else 0
    if result.answer != stream.text.strip():  # the markers added to sentences the model left uncited
        print(f"\nWith citations:\n{result.answer}")
    _print_summary(result)
    return 1 if result.error else 0


def _print_summary(result: Any) -> None:
    if result.error:
        print(f"\nerror: {result.error}", file=sys.stderr)
    if result.fallback_reason:
        print(f"\nnote: {result.fallback_reason}", file=sys.stderr)
    if result.citations:
        print("\nCitations:")
        for c in result.citations:
            extra = " (matched, no marker)" if c.inferred else ""
            quote = " ".join(c.text.split())
            print(f"  [{c.n}] {c.file_name} p.{c.page}{extra}: \"{quote[:160]}\"")
    elif result.abstained:
        print("\n(not found in your documents)")
    unsupported = [g for g in result.groundedness if not g["supported"]]
    for g in unsupported:
        print(f"  unsupported: {g['sentence'][:120]} ({g['reason']})")
    for r in result.reflection:
        score = "unscored" if r["unscored"] else f"{r['score']:.1f}"
        print(f"  reflection round {r['round']} (search {r['query'][:60]!r}, widening {r['expansion']}): "
              f"{score} — {r['reason'][:100]}")
    t = result.timings
    print(f"\nsources {t.get('sources_ms', 0):.0f} ms, first token {t.get('ttft_ms', 0):.0f} ms, "
          f"{t.get('tokens', 0)} tokens in {t.get('generation_ms', 0) / 1000:.1f} s "
          f"({t.get('tokens_per_s', 0):.1f} tok/s), backend {result.llm_backend}")


def _pages(start: int, end: int) -> str:
    return str(start) if end <= start else f"{start}-{end}"


def cmd_eval_answers(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.evaluation.answers import run_eval_answers

    return run_eval_answers(args, config)

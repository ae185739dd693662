"""``python -m rag ask`` and ``python -m rag eval-answers``.

Hooked into ``rag.cli.main`` with ``add_commands(commands)``; each handler is ``fn(args, config) -> int``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rag.config import DEFAULT_HOME, RagConfig


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
    evaluate.add_argument("--dataset", default="squad", help="squad, cmrc2018 or a SQuAD-format JSON path")
    evaluate.add_argument("--n", type=int, default=30, help="answerable questions (default 30)")
    evaluate.add_argument("--unanswerable", type=int, default=None,
                          help="questions whose paragraph is left out of the index (default n/3)")
    evaluate.add_argument("--distractors", type=int, default=3, help="distractor paragraphs per PDF (default 3)")
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--also-server", action="store_true",
                          help="also evaluate the configured OpenAI-compatible server (llm.base_url)")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(handler=cmd_eval_answers)


def build_answer_engine(config: RagConfig, store: Any = None, *, search_mode: str = "always",
                        llm_groundedness: bool = False, handle: Any = None, reranker: Any = None) -> Any:
    """The real engine from config: store, pipeline, LLM (with fallback recorded), embedder for checks.

    ``handle`` (an ``LLMHandle``) and ``reranker`` let the app pass models it has already loaded and
    cached; by default both are built from ``config``.
    """
    from rag.answer.engine import AnswerEngine
    from rag.models.llms import load_embedded_llm
    from rag.runtime import build_llm_handle, build_reranker, build_store
    from rag.retrieval.pipeline import RetrievalPipeline

    store = store or build_store(config)
    handle = handle or build_llm_handle(config)
    # the answering LLM is loaded anyway; the pipeline calls it only when query.rewrite / query.hyde
    # is on for a call, and the app changes those per call on a cached engine
    counter = getattr(handle.llm, "count_tokens", None)  # one context budget, in the LLM's own tokens
    pipeline = RetrievalPipeline(store, llm=handle.llm, reranker=reranker or build_reranker(config),
                                 count_tokens=counter if callable(counter) else None)
    factory = None
    if handle.backend_used == "openai" and config.llm.fallback_to_embedded:
        def factory() -> Any:
            return load_embedded_llm(config.llm, config.generation, DEFAULT_HOME)
    return AnswerEngine(pipeline, store, handle.llm, embedder_for_checks=store.router, fallback_llm_factory=factory,
                        llm_backend=handle.backend_used, llm_fallback_reason=handle.fallback_reason,
                        search_mode=search_mode, llm_groundedness=llm_groundedness)


def cmd_ask(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.models.llm_openai import LLMUnavailableError
    from rag.retrieval.pipeline import QueryError

    try:
        engine = build_answer_engine(config, search_mode=args.search, llm_groundedness=args.llm_check)
    except LLMUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        stream = engine.stream(args.question, config, doc_ids=args.doc_ids, use_knowledge_base=not args.no_kb)
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
    if result.answer != stream.text.strip():
        print(f"\nRevised answer (reflection round {_selected_round(result.reflection)}):\n{result.answer}")
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
        print(f"  reflection round {r['round']} ({r['strategy']}): {score} — {r['reason'][:100]}")
    t = result.timings
    print(f"\nsources {t.get('sources_ms', 0):.0f} ms, first token {t.get('ttft_ms', 0):.0f} ms, "
          f"{t.get('tokens', 0)} tokens in {t.get('generation_ms', 0) / 1000:.1f} s "
          f"({t.get('tokens_per_s', 0):.1f} tok/s), backend {result.llm_backend}")


def _pages(start: int, end: int) -> str:
    return str(start) if end <= start else f"{start}-{end}"


def _selected_round(rounds: list[dict]) -> Any:
    return next((r["round"] for r in rounds if r.get("selected")), "?")


def cmd_eval_answers(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.evaluation.answers import run_eval_answers

    return run_eval_answers(args, config)

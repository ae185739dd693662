"""``python -m rag.lab bench load``: browser-like sessions asking at once while documents are ingested.

Issue #14, suite 4. Starts the app (``python -m tests.hardening.load_server``) on a free loopback port
with a fresh data folder; one tab uploads a generated library through the Documents page, then
``--sessions`` tabs each ask ``--questions`` distinct questions on the Chat page, one after another,
while the first tab keeps ingesting new documents through the ingest queue. Prints time-to-sources
(from pressing Enter to the answer's "Sources (n)" expander) at p50/p95/p99, errors, the longest wait
for the model and what the server recorded, with the load average before and after.

``--llm scripted`` answers with the app's ``EmbeddedLLM`` around a llama.cpp stand-in (``--prompt-ms``
per call, ``--token-ms`` per piece), so calls take turns as on the real model; ``--llm bundled`` uses
the real ``--model``. ``--embeddings hash`` swaps the embedders for the tests' hash embedder.

The browser-like client and the server harness are in ``tests/hardening`` (they speak Streamlit's
protocol, and nothing under ``rag/`` imports Streamlit), so this runs from a checkout with its tests.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from rag.config import RagConfig


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench load", description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--questions", type=int, default=50, help="questions per session")
    parser.add_argument("--llm", choices=("scripted", "bundled"), default="scripted")
    parser.add_argument("--model", default="qwen2.5-0.5b-instruct", help="--llm bundled: the bundled model")
    parser.add_argument("--answer-tokens", type=int, default=48, help="--llm bundled: answer length cap")
    parser.add_argument("--embeddings", choices=("hash", "bundled"), default="hash")
    parser.add_argument("--prompt-ms", type=float, default=10.0, help="--llm scripted: ms per call")
    parser.add_argument("--token-ms", type=float, default=2.0, help="--llm scripted: ms per generated piece")
    parser.add_argument("--queue-timeout", type=float, default=600.0, help="llm.queue_timeout_s for the run")
    parser.add_argument("--check-keeps-ms", type=float, default=None,
                        help="override how long the answerability check keeps the model for its answer (0 = off)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = run(args)
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
        return 0 if figures["errors"] == 0 else 1
    print(f"{figures['sessions']} sessions × {figures['questions_per_session']} questions, llm {figures['llm']}, "
          f"embeddings {figures['embeddings']}: {figures['questions']} answered in {figures['seconds']} s")
    print(f"  time to sources: p50 {figures['time_to_sources_p50_s']} s, p95 {figures['time_to_sources_p95_s']} s, "
          f"p99 {figures['time_to_sources_p99_s']} s; slowest whole answer {figures['answer_max_s']} s")
    print(f"  errors {figures['errors']}; documents ingested during the questions "
          f"{figures['ingests_during_questions']}; library problems {len(figures['library_problems'])}")
    server = figures["server"]
    print(f"  model: {server['model_calls']} calls, wait p95 {server['wait_p95_s']} s, max {server['wait_max_s']} s, "
          f"most calls ahead {server['most_calls_ahead']}; page showed at most "
          f"{figures['most_questions_ahead_shown']} questions ahead")
    print(f"  server: {server['answers']} answers ({', '.join(server['answer_types'])}), "
          f"{len(server['answers_with_error'])} with an error, {server['answers_without_sources']} without sources; "
          f"first token p95 {server['ttft_ms_p95']} ms; answer prompt tokens evaluated p50 "
          f"{server['answer_prompt_tokens_evaluated_p50']}, max {server['answer_prompt_tokens_evaluated_max']}")
    print(f"  load average {figures['load_before']} -> {figures['load_after']}")
    for error in figures["error_samples"]:
        print(f"  error: {error}")
    return 0 if figures["errors"] == 0 else 1


def run(args: argparse.Namespace) -> dict:
    from tests.hardening.load_documents import make_corpus
    from tests.hardening.load_scenario import library_problems, run_load, serve_app, server_records

    home = Path(tempfile.mkdtemp(prefix="citewise-load-"))
    corpus = make_corpus(home / "documents", questions=args.sessions * args.questions)
    env = {"RAG_LLM__QUEUE_TIMEOUT_S": str(args.queue_timeout)}
    if args.llm == "bundled":
        env.update({"RAG_LLM__EMBEDDED_MODEL": args.model, "RAG_GENERATION__MAX_ANSWER_TOKENS": str(args.answer_tokens)})
    load_before = _load()
    with serve_app(home, llm=args.llm, embeddings=args.embeddings, env=env,
                   server_options=["--prompt-ms", str(args.prompt_ms), "--token-ms", str(args.token_ms),
                                   *(["--check-keeps-ms", str(args.check_keeps_ms)] if args.check_keeps_ms is not None
                                     else [])]) as (url, log):
        report = run_load(url, corpus, sessions=args.sessions, questions=args.questions)
        load_after = _load()
    expected = [p.name for p in corpus.library] + [i.file_name for i in report.ingests if "chunks" in i.outcome]
    problems = library_problems(home / "data", expected)
    return {**report.summary(), "sessions": args.sessions, "questions_per_session": args.questions, "llm": args.llm
            + (f" ({args.model})" if args.llm == "bundled" else f" ({args.prompt_ms:g} ms/call + {args.token_ms:g} ms/piece)"),
            "embeddings": args.embeddings, "check_keeps_ms": args.check_keeps_ms,
            "errors": len(report.errors) + len(problems),
            "error_samples": (report.errors + problems)[:10], "library_problems": problems,
            "server": server_records(log), "load_before": load_before, "load_after": load_after,
            "data": str(home)}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else \
        " ".join(f"{v:.2f}" for v in os.getloadavg())


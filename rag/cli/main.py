"""``python -m rag``: ingest, list, search, ask and evaluate, from a terminal.

The commands share the library with a running app (or another command): ``docs`` and ``search``
never wait; ``ingest``, ``delete`` and ``reindex`` wait for the write lock when another process is
writing (saying so on stderr), and after ``LOCK_TIMEOUT_S`` fail naming that process. Exit codes: 0
done, 1 a file or document failed, 3 the library or the document was busy (try again later).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from rag.cli.common import LAB_COMMANDS, add_global_options, command_of, configure, forward_to_lab
from rag.config import RagConfig, setting_specs

if TYPE_CHECKING:
    from rag.index.store import DocumentStore

BUSY = 3  # exit code: another process holds the library or the document; nothing was changed


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if command_of(argv) in LAB_COMMANDS:
        return forward_to_lab(argv)
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passes_extra", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.rest = extra
    config = configure(args)
    if config is None:
        return 2
    return args.handler(args, config)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag", description="Citewise document RAG engine",
                                     epilog="Benchmarks and calibration (bench, calibrate-gate) run as "
                                            "`python -m rag.lab`; `python -m rag bench ...` forwards there.")
    add_global_options(parser)
    commands = parser.add_subparsers(dest="command", required=True)

    ingest = commands.add_parser("ingest", help="ingest files or folders")
    ingest.add_argument("paths", nargs="+", type=Path)
    ingest.add_argument("--json", action="store_true")
    ingest.set_defaults(handler=_cmd_ingest)

    docs = commands.add_parser("docs", help="list documents")
    docs.add_argument("--json", action="store_true")
    docs.set_defaults(handler=_cmd_docs)

    delete = commands.add_parser("delete", help="delete a document and everything stored for it")
    delete.add_argument("doc_id")
    delete.set_defaults(handler=_cmd_delete)

    embed = commands.add_parser("embed", help="store the missing vectors of keyword-searchable documents "
                                              "(resume an embedding that stopped)")
    embed.add_argument("doc_ids", nargs="*", metavar="DOC_ID", help="default: every document still embedding")
    embed.set_defaults(handler=_cmd_embed)

    reindex = commands.add_parser("reindex", help="parse, chunk and embed a stored document again")
    reindex.add_argument("doc_id")
    reindex.set_defaults(handler=_cmd_reindex)

    search = commands.add_parser("search", help="retrieve passages for a question and show every stage")
    search.add_argument("question")
    search.add_argument("--doc", action="append", dest="doc_ids", metavar="ID", help="only these documents")
    search.add_argument("--json", action="store_true")
    search.set_defaults(handler=_cmd_search)

    settings = commands.add_parser("config", help="every setting: type, default, bounds, current value and help")
    settings.add_argument("--json", action="store_true")
    settings.set_defaults(handler=_cmd_config)

    evaluate = commands.add_parser("eval", help="retrieval quality on a benchmark dataset (--help for options)",
                                   add_help=False)
    evaluate.set_defaults(handler=_cmd_eval, passes_extra=True)


    from rag.cli.answer import add_commands

    add_commands(commands)
    return parser


def _expand(paths: list[Path]) -> list[Path]:
    from rag.ingest.parse import SUPPORTED_EXTENSIONS

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix.lower() in SUPPORTED_EXTENSIONS))
        else:
            files.append(path)
    return files


def _open_store(config: RagConfig):
    """The library, telling stderr when a write has to wait for another process."""
    from rag.runtime import build_store

    store = build_store(config)
    store.on_wait = lambda message: print(message, file=sys.stderr, flush=True)
    return store


def _cmd_ingest(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.cli.progress_lines import ProgressPrinter
    from rag.ingest.ingestor import Ingestor
    from rag.ingest.progress import IngestProgress
    from rag.runtime import build_metadata_llm

    store = _open_store(config)
    ingestor = Ingestor(store, config, metadata_llm=build_metadata_llm(config))
    results = []
    for path in _expand(args.paths):
        # stage, n/N, rate and time left on stderr (stdout stays the result lines or JSON)
        result = ingestor.ingest_path(path, progress=IngestProgress(path.name, on_change=ProgressPrinter()))
        results.append(result)
        if not args.json:
            detail = (f"{result.pages} pages, {result.chunks} chunks, {result.language}" if result.ok
                      else result.error)
            if result.ok and (result.tables or result.ocr_pages):
                detail += f", {result.tables} tables" + (f", OCR'd pages {result.ocr_pages}" if result.ocr_pages else "")
            print(f"{result.status:<10} {result.doc_id or '-':<17} {result.file_name}  {detail}")
            for note in result.notes:
                print(f"{'':<28} note: {note}")
    if args.json:
        print(json.dumps([asdict(r) for r in results], ensure_ascii=False, indent=2))
    failed = [r for r in results if r.status == "failed" or (r.status == "searchable" and r.error)]
    return BUSY if failed and all(r.busy for r in failed) else 1 if failed else 0


def _vectors_needed(store: DocumentStore, doc_id: str) -> int:
    """How many vectors a document's chunks need, counted from the configured models without loading them."""
    specs = store.router.specs_for
    return sum(len(specs(chunk.language)) for chunk in store.chunks(doc_id))


def _cmd_docs(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.index.searchable import keyword_only

    store = _open_store(config)
    records = store.documents()
    partial = {k.doc_id: k for k in keyword_only(store)}
    for lost in store.jobs.lost():
        print(f"lost upload: {lost.file_name}: {lost.message()}", file=sys.stderr)
    if args.json:
        keys = ("doc_id", "file_name", "status", "pages", "chunks", "language", "error")
        rows = [{("id" if k == "doc_id" else k): getattr(r, k) for k in keys} for r in records]
        for row in rows:
            state = partial.get(row["id"])
            # vectors, not chunks: an English chunk has one per English model (two by default)
            row["vectors"] = state.total if state else _vectors_needed(store, row["id"])
            row["embedded"] = state.embedded if state else (row["vectors"] if row["status"] == "completed" else 0)
            if state and state.error:
                row["error"] = f"embedding stopped: {state.error}"
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not records:
        print("no documents")
    for r in records:
        state = partial.get(r.doc_id)
        status = f"{r.status} {state.embedded}/{state.total}" if state else r.status
        claim = store.busy(r.doc_id) if r.status != "completed" else None
        error = f"embedding stopped: {state.error}" if state and state.error else r.error
        note = f"  ({claim.describe()})" if claim else f"  ({error})" if error else ""
        print(f"{r.doc_id}  {status:<10} {r.pages:>5}p {r.chunks:>6}c {r.language or '-':<3} {r.file_name}{note}")
    return 0


def _cmd_delete(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.index.store import DocumentBusyError, LibraryBusyError

    try:
        record = _open_store(config).delete(args.doc_id)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    except (DocumentBusyError, LibraryBusyError) as exc:
        print(f"not deleted: {exc}", file=sys.stderr)
        return BUSY
    print(f"deleted {record.doc_id} {record.file_name}")
    return 0


def _cmd_embed(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.cli.progress_lines import ProgressPrinter
    from rag.ingest.progress import IngestProgress
    from rag.ingest.vector_fill import fill_vectors

    store = _open_store(config)
    waiting = {k.doc_id: k for k in store.keyword_only()}
    unknown = [d for d in args.doc_ids if d not in waiting]
    if unknown:
        print(f"error: not keyword-only (unknown, or already completed): {', '.join(unknown)}", file=sys.stderr)
        return 1
    failed = False
    for doc_id in args.doc_ids or sorted(waiting):
        progress = IngestProgress(waiting[doc_id].file_name, on_change=ProgressPrinter())
        result = fill_vectors(store, doc_id, progress=progress)
        progress.finish(error=result.error if result.status != "completed" else "")
        failed |= result.status != "completed"
        print(f"{result.status:<10} {doc_id}  {result.embedded}/{result.total} vectors stored"
              + (f"  ({result.error})" if result.error else ""))
    if not waiting:
        print("no document is waiting for vectors")
    return 1 if failed else 0


def _cmd_reindex(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.ingest.ingestor import Ingestor
    from rag.runtime import build_metadata_llm

    store = _open_store(config)
    try:
        result = Ingestor(store, config, metadata_llm=build_metadata_llm(config)).reindex(args.doc_id)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    if result.ok:
        print(f"{result.status} {result.doc_id} {result.file_name}")
        return 0
    print(f"{result.status} {result.doc_id} {result.file_name}: {result.error}", file=sys.stderr)
    return BUSY if result.busy else 1


def _cmd_search(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.retrieval.query import QueryError
    from rag.runtime import build_engine

    try:
        result = build_engine(config, with_llm=False).search(args.question, doc_ids=args.doc_ids)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    hits = [{"rank": i, "chunk_id": n.node.node_id, "doc_id": n.node.metadata.get("doc_id"),
             "file_name": n.node.metadata.get("file_name"), "page": n.node.metadata.get("page_start"),
             "score": n.score, "relevance": n.node.metadata.get("relevance"), "text": n.node.get_content()}
            for i, n in enumerate(result.nodes, start=1)]
    if args.json:
        print(json.dumps({"query": result.query, "hits": hits, "empty_reason": result.empty_reason,
                          "details": result.details, "trace": result.trace.to_dict()},
                         ensure_ascii=False, indent=2, default=str))
        return 0
    if not hits:
        print(result.empty_reason)
    for hit in hits:
        text = " ".join(hit["text"].split())
        print(f"[{hit['rank']}] {hit['file_name']} p.{hit['page']}  score={hit['score']:.4f}  "
              f"relevance={hit['relevance'] or 0:.3f}\n    {text[:300]}")
    print("\nstages:")
    for stage in result.trace.stages:
        top = ", ".join(f"{c.chunk_id}:{c.score:.3f}" if c.score is not None else c.chunk_id
                        for c in stage.candidates[:5])
        reason = f"  [fallback: {stage.fallback_reason}]" if stage.fallback_reason else ""
        print(f"  {stage.name:<9} {stage.duration_ms:8.1f} ms  {len(stage.candidates):>3} candidates  {top}{reason}")
        for note in stage.notes:
            print(f"            {note}")
    return 0


def _cmd_config(args: argparse.Namespace, config: RagConfig) -> int:
    """Print every setting as described in ``rag.config``, with its value after --config, env and --set."""
    rows = []
    for key, spec in setting_specs().items():
        section, name = key.split(".")
        rows.append({"key": key, "type": spec.kind, "default": spec.default, "minimum": spec.minimum,
                     "maximum": spec.maximum, "choices": list(spec.choices) if spec.choices else None,
                     "current": getattr(getattr(config, section), name), "help": spec.help})
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    width = max(len(row["key"]) for row in rows)
    for row in rows:
        if row["minimum"] is not None:
            bounds = f"{row['minimum']}..{row['maximum']}"
        else:
            bounds = "|".join(row["choices"] or ())
        changed = "" if row["current"] == row["default"] else "  (changed)"
        print(f"{row['key']:<{width}}  {row['type']:<6} default {row['default']!r}  "
              + (f"[{bounds}]  " if bounds else "") + f"current {row['current']!r}{changed}")
        print(f"{'':<{width}}  {row['help']}")
    return 0


def _cmd_eval(args: argparse.Namespace, config: RagConfig) -> int:
    from rag.evaluation.retrieval import main as eval_main

    return eval_main(args.rest, config)

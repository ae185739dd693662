"""``python -m rag bench ingest``: ingest the shared PDFs into a temporary store and print where time goes.

Ingest efficiency = the embedding-only time of the very same chunks (measured in the same run, cache
off) divided by the whole ingest time. Embedding is the floor no pipeline can beat on this machine, so
the ratio says how much parsing, chunking and storing add on top of it.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from rag.config import RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT
from rag.models.embedding_router import model_id_of
from rag.ingest.ingestor import Ingestor
from rag.runtime import build_router, build_store

logger = logging.getLogger(__name__)
STAGES = ("parse", "chunk", "keywords", "embed")  # "searchable" is a point in time (parse..keywords), not a stage


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag bench ingest")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--lang", choices=["en", "zh", "all"], default="all")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="only files whose name contains TEXT (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    folders = [args.data_root / "pdfs" / lang for lang in (("en", "zh") if args.lang == "all" else (args.lang,))]
    files = [p for folder in folders for p in sorted(folder.glob("*.pdf"))
             if not args.only or any(text in p.name for text in args.only)]
    if not files:
        print(f"no PDFs under {', '.join(map(str, folders))}")
        return 1
    report = run(files, config)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 0


def run(files: list[Path], config: RagConfig) -> dict:
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        config = replace(config, storage=replace(config.storage, data_dir=tmp, chroma_mode="embedded"))
        router = build_router(config)
        for spec in router.specs():  # load and warm every model outside the timed region
            router.for_spec(spec).get_text_embedding_batch(["warm up"])
        store = build_store(config, router)
        ingestor = Ingestor(store, config)
        stage_seconds: dict[str, float] = defaultdict(float)
        pages = chunks = 0
        per_file = []
        started = time.perf_counter()
        for path in files:
            result = ingestor.ingest_path(path)
            for stage in STAGES:
                stage_seconds[stage] += result.timings.get(stage, 0.0)
            pages += result.pages
            chunks += result.chunks
            per_file.append({"file": path.name, "status": result.status, "pages": result.pages,
                             "chunks": result.chunks, "language": result.language,
                             "seconds": round(sum(result.timings.get(s, 0.0) for s in STAGES), 2),
                             "searchable_s": round(result.timings.get("searchable", 0.0), 2), "error": result.error})
        ingest_seconds = time.perf_counter() - started

        texts_by_model: dict[str, list[str]] = defaultdict(list)
        for record in store.documents():
            for chunk in store.chunks(record.doc_id):
                for spec in router.specs_for(chunk.language):  # English chunks: both English models
                    texts_by_model[spec].append(chunk.text)
        embed_only = 0.0
        per_model = {}
        for spec, texts in texts_by_model.items():
            embedder = router.for_spec(spec)
            t0 = time.perf_counter()
            embedder.get_text_embedding_batch(texts)
            seconds = time.perf_counter() - t0
            embed_only += seconds
            per_model[model_id_of(embedder)] = {"chunks": len(texts), "seconds": round(seconds, 2),
                                                "chunks_per_s": round(len(texts) / seconds, 1)}
        store.close()
    return {
        "files": per_file,
        "pages": pages,
        "chunks": chunks,
        "stage_seconds": {stage: round(stage_seconds.get(stage, 0.0), 2) for stage in STAGES},
        "ingest_seconds": round(ingest_seconds, 2),
        "pages_per_s": round(pages / ingest_seconds, 2) if ingest_seconds else 0.0,
        "embedding_only_seconds": round(embed_only, 2),
        "embedding_only_by_model": per_model,
        "efficiency": round(embed_only / ingest_seconds, 3) if ingest_seconds else 0.0,
    }


def format_report(report: dict) -> str:
    lines = ["| file | status | pages | chunks | lang | seconds |", "|---|---|---|---|---|---|"]
    for f in report["files"]:
        lines.append(f"| {f['file']} | {f['status']} | {f['pages']} | {f['chunks']} | {f['language']} | "
                     f"{f['seconds']} |" + (f" {f['error']}" if f["error"] else ""))
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in report["stage_seconds"].items())
    lines += [
        "",
        f"pages {report['pages']}, chunks {report['chunks']}, ingest {report['ingest_seconds']:.1f}s "
        f"({report['pages_per_s']:.2f} pages/s)",
        f"stages: {stages}",
        "embedding only (same chunks, no cache): " + ", ".join(
            f"{m} {v['chunks']} chunks in {v['seconds']}s ({v['chunks_per_s']}/s)"
            for m, v in report["embedding_only_by_model"].items()),
        f"ingest efficiency = embedding-only {report['embedding_only_seconds']:.1f}s / ingest "
        f"{report['ingest_seconds']:.1f}s = {report['efficiency']:.1%} (target >= 75%)",
    ]
    return "\n".join(lines)

"""``python -m rag.lab bench docsignal``: does the document-level metadata signal help retrieval?

Documents are whole SQuAD v1.1 dev articles (all paragraphs of one title, so a question must find
its paragraph inside the right long document) or CMRC2018 dev contexts, ingested as neutrally named
text files ("doc-0007.txt": the file name gives nothing away). The configured LLM writes each
document's metadata exactly as ingest does (``rag.ingest.metadata``; cached per model and text in
``<cache>/lab/docsignal-metadata.json``). Each question is asked once; the default pipeline's ranking
(depth 20, no context budget) is then re-ranked by ``DocumentBoostPostprocessor`` at every weight.
A hit is a passage of the gold document covering the answer's position.

Questions are split by a hash of their id into a tuning and a test half. The weight is chosen on the
tuning half (best MRR@10) and reported on the test half next to no boost. Prints the load average.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from llama_index.core.schema import QueryBundle

from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.retrieval import mode_settings
from rag.ingest.ingestor import Ingestor
from rag.ingest.metadata import generate_metadata
from rag.retrieval.document_signal import DocumentBoostPostprocessor, DocumentSignal
from rag.runtime import build_engine, build_llm_handle, build_router, build_store
from rag.text.language import detect_language

DEFAULT_DATA_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared beside the repo
LAB = DEFAULT_HOME / "lab"
WEIGHTS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5)


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench docsignal")
    parser.add_argument("--dataset", choices=["squad", "cmrc2018"], default="squad")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--docs", type=int, default=48, help="documents (sampled with --seed)")
    parser.add_argument("--queries", type=int, default=1000, help="questions per split at most")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    documents, questions = load(args.dataset, args.data_root, args.docs, args.seed)
    report = run(documents, questions, config, args)
    report["loadavg"] = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_report(report))
    return 0


def load(dataset: str, data_root: Path, count: int, seed: int) -> tuple[list[str], list[dict]]:
    """Documents (texts) and questions ({id, question, doc, offset}) of a sample of ``count`` documents."""
    name = "squad-v1.1-dev.json" if dataset == "squad" else "cmrc2018-dev.json"
    articles = json.loads((data_root / name).read_text(encoding="utf-8"))["data"]
    random.Random(seed).shuffle(articles)
    documents, questions = [], []
    for article in articles[:count]:
        text = ""
        for paragraph in article["paragraphs"]:
            raw = paragraph["context"]
            lead = len(raw) - len(raw.lstrip())
            context = raw.strip()  # the parser strips the text too; answer offsets move by ``lead``
            start = len(text) + (2 if text else 0)
            text = f"{text}\n\n{context}" if text else context
            for qa in paragraph["qas"]:
                questions.append({"id": qa["id"], "question": qa["question"], "doc": len(documents),
                                  "offset": start + int(qa["answers"][0]["answer_start"]) - lead})
        documents.append(text)
    return documents, questions


def run(documents: list[str], questions: list[dict], config: RagConfig, args: argparse.Namespace) -> dict:
    cache = LAB / "docsignal-embed-cache.sqlite3"
    with tempfile.TemporaryDirectory(prefix="citewise-docsignal-") as tmp:
        config = replace(config, storage=replace(config.storage, data_dir=tmp, chroma_mode="embedded"))
        if cache.exists():
            shutil.copy(cache, Path(tmp) / "embed_cache.sqlite3")
        store = build_store(config, build_router(config))
        ids = []
        for number, text in enumerate(documents):
            result = Ingestor(store, config).ingest_bytes(text.encode("utf-8"), f"doc-{number:04d}.txt")
            if not result.ok:
                raise RuntimeError(result.error)
            ids.append(result.doc_id)
        metadata_s = _write_metadata(store, ids, config)
        signal = DocumentSignal.from_records(store.documents())
        ranked_config, _ = mode_settings("default", config)
        engine = build_engine(ranked_config, store=store, with_llm=False)  # the app's retrieval, ranked to depth 20
        splits: dict[str, list[dict]] = {"tune": [], "test": []}
        for question in questions:
            split = "tune" if int(hashlib.sha1(question["id"].encode()).hexdigest(), 16) % 2 == 0 else "test"
            splits[split].append(question)
        rng = random.Random(args.seed)
        ranks: dict[str, dict[float, list[int | None]]] = {}
        for split, items in splits.items():
            items = rng.sample(items, min(args.queries, len(items)))
            ranks[split] = {weight: [] for weight in (0.0, *WEIGHTS)}
            for question in items:
                nodes = engine.search(question["question"]).nodes
                for weight in ranks[split]:
                    ordered = DocumentBoostPostprocessor(signal, weight=weight).postprocess_nodes(
                        nodes, QueryBundle(question["question"])) if weight else nodes
                    ranks[split][weight].append(_rank(ordered, ids[question["doc"]], question["offset"]))
        store.close()
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(tmp) / "embed_cache.sqlite3", cache)
    scores = {split: {weight: _metrics(found) for weight, found in by_weight.items()} for split, by_weight in ranks.items()}
    chosen = max((0.0, *WEIGHTS), key=lambda weight: scores["tune"][weight]["mrr@10"])  # ties: no boost
    return {"dataset": args.dataset, "documents": len(documents), "entries": len(signal),
            "metadata_s_per_doc": round(metadata_s / max(len(documents), 1), 1),
            "llm": config.llm.embedded_model if config.llm.backend == "embedded" else config.llm.model,
            "chosen_weight": chosen, "scores": {split: {str(w): m for w, m in by.items()} for split, by in scores.items()}}


def _write_metadata(store, ids: list[str], config: RagConfig) -> float:
    """Metadata for every document, from the cache when this model already described this text."""
    path = LAB / "docsignal-metadata.json"
    cached = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    model = config.llm.embedded_model if config.llm.backend == "embedded" else config.llm.model
    llm = None
    seconds = 0.0
    for doc_id in ids:
        chunks = store.chunks(doc_id)
        key = hashlib.sha256(f"{model}|{config.metadata.max_input_chars}|".encode()
                             + "\x00".join(c.text for c in chunks).encode()).hexdigest()
        if key not in cached or cached[key].get("error"):  # a failure is tried again (parsing improves)
            llm = llm or build_llm_handle(config).llm
            started = time.perf_counter()
            language = detect_language("".join(c.text for c in chunks[:20]))
            result = generate_metadata(llm, [c.text for c in chunks], language=language,
                                       max_input_chars=config.metadata.max_input_chars)
            seconds += time.perf_counter() - started
            cached[key] = {**result.registry_fields(), "error": result.error}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cached, ensure_ascii=False), encoding="utf-8")
        fields = {name: cached[key][name] for name in ("summary", "keywords", "topics", "key_phrases")}
        store.registry.update(doc_id, **fields)
    return seconds


def _rank(nodes, doc_id: str, offset: int) -> int | None:
    for rank, node in enumerate(nodes, start=1):
        meta = node.node.metadata
        if meta.get("doc_id") == doc_id and int(meta["char_start"]) <= offset < int(meta["char_end"]):
            return rank
    return None


def _metrics(ranks: list[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {"queries": len(ranks),
            "recall@1": round(sum(r == 1 for r in ranks) / n, 4),
            "recall@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 4),
            "mrr@10": round(sum(1 / r for r in ranks if r is not None and r <= 10) / n, 4)}


def format_report(report: dict) -> str:
    lines = [f"Document signal on {report['dataset']} ({report['documents']} documents, {report['entries']} with "
             f"metadata by {report['llm']}, {report['metadata_s_per_doc']} s per document; load average "
             f"{' '.join(report['loadavg'])})", "", "| split | weight | queries | R@1 | R@5 | MRR@10 |",
             "|---|---|---|---|---|---|"]
    for split in ("tune", "test"):
        for weight, metrics in report["scores"][split].items():
            mark = " (chosen on tune)" if float(weight) == report["chosen_weight"] else ""
            lines.append(f"| {split} | {weight}{mark} | {metrics['queries']} | {metrics['recall@1']:.4f} | "
                         f"{metrics['recall@5']:.4f} | {metrics['mrr@10']:.4f} |")
    return "\n".join(lines)

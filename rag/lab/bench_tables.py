"""``python -m rag.lab bench tables``: do questions about table cells retrieve their table, with tables
read as plain text (before) and as Markdown table chunks (after)?

The questions (``rag/lab/data/table_questions.json``) were written by hand from the tables of the Uber
10-Q and the two Chinese annual reports in ``../shared/data/pdfs``; each names its file, page, row
label and cell value. A question is a hit at k when one of the top-k passages of the default pipeline
(ranked to depth 20, no context budget) lies on that page and holds both the row label and the value
(whitespace ignored); "row intact at 3" also asks that they share one line, so the passage shows which
row the value belongs to (flattened tables put every cell on a line of its own). "Row to model" asks what
the answer reads: the row's line is in one of the sources the app gives the answering model (its top_k,
context budget counted with the bundled model's tokenizer, evidence fitting). A filing states many
figures in more than one table (the income statement and the MD&A), so "same fact at 3" counts a row
with that label and value on any page of the right document. The same criteria serve both runs. Figures
are printed per split: tuning (even question numbers) and test (odd).
``--split holdout`` / ``holdout2`` … ``holdout5`` read ``table_questions_<split>.json`` instead: questions
written blind after both halves had been used (half of them phrased without the row's printed label), over
more PDFs. Each was reported once before anything was chosen on it; ``holdout`` has since been a
development set, and ``holdout3`` keeps off its pages and the tuning half's; ``holdout4``, written after all of
them had been looked at, keeps off every page they use (and adds the pumpkin book's tables); ``holdout5``, written
the same way after ``holdout4``, holds only the two annual reports' questions (no other PDF had an unused table page).
``holdout6`` was written blind on thirteen PDFs from Debian packages that no earlier set or change had seen (R
packages' papers, Chinese LaTeX manuals; ``python -m rag.lab.debian_docs`` fetches them), and every later
``holdoutN`` the same way on six to thirteen more, after the one before had been written (from ``holdout18`` on,
English PDFs with eight questions asked in Chinese: no Chinese PDF with a table was left outside the earlier sets'
documents). A set is added by saving its file here as ``data/table_questions_holdoutN.json``.

Both runs ingest the three PDFs into temporary stores with the configured embedders; embeddings are
cached in ``<cache>/lab/tables-embed-cache.sqlite3`` so a second run embeds only what changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.retrieval import mode_settings
from rag.ingest.ingestor import Ingestor
from rag.lab.bench_evidence import answer_context_engine, model_token_counter
from rag.lab.debian_docs import DEBIAN_DOCS_DIR
from rag.runtime import build_engine, build_router, build_store

QUESTIONS = Path(__file__).with_name("data") / "table_questions.json"
# Written blind after the tune/test halves had been used, each reported once before anything was chosen
# on it; holdout became a development set after its report; holdout2 and the rest were written later, in order.
HELD_OUT = {path.stem.removeprefix("table_questions_"): path
            for path in sorted(Path(__file__).with_name("data").glob("table_questions_holdout*.json"),
                               key=lambda path: int(path.stem.removeprefix("table_questions_holdout") or 1))}
SPLITS = ("tune", "test", *HELD_OUT, "all")
DEFAULT_DATA_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared beside the repo
KS = (1, 3, 5)
EXPLAIN = bool(os.environ.get("CITEWISE_EXPLAIN"))  # print the top 3 of every miss (diagnosis only)


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench tables")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--split", choices=SPLITS, default="all",
                        help="all = tune + test; holdout, holdout2 … = a held-out file, run on its own")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true", help="list the questions missed at 3")
    parser.add_argument("--after-only", action="store_true", help="skip the tables-as-plain-text run (tuning)")
    args = parser.parse_args(argv)
    source = HELD_OUT.get(args.split, QUESTIONS)
    questions = [q for q in json.loads(source.read_text(encoding="utf-8"))["questions"]
                 if args.split == "all" or q["split"] == args.split]
    files = sorted({q["file"] for q in questions})
    paths = [_find_pdf(name, args.data_root) for name in files]
    if not all(paths):
        absent = ", ".join(name for name, path in zip(files, paths) if path is None)
        print(f"not under {args.data_root / 'pdfs'} nor {DEBIAN_DOCS_DIR}: {absent} "
              "(the Debian documents come from `python -m rag.lab.debian_docs`)")
        return 1
    runs = {label: run(paths, questions, config.with_overrides({"ingest.tables": tables}))
            for label, tables in (("before (tables as plain text)", False), ("after (tables as Markdown chunks)", True))
            if tables or not args.after_only}
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    if args.json:
        print(json.dumps({"split": args.split, "runs": runs, "loadavg": load}, ensure_ascii=False, indent=2))
        return 0
    print(f"Table questions ({len(questions)}; load average {' '.join(load)})\n")
    print("| run | split | questions | hit@1 | hit@3 | hit@5 | row intact@3 | same fact@3 | en hit@3 | zh hit@3 "
          "| paraphrased hit@3 | row to model | table chunks | parse s | ingest s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, result in runs.items():
        for split in SPLITS:
            scores = result[split]
            if scores["questions"]:
                print(f"| {label} | {split} | {scores['questions']} | {scores['hit@1']:.3f} | {scores['hit@3']:.3f} | "
                      f"{scores['hit@5']:.3f} | {scores['row intact@3']:.3f} | {scores['fact@3']:.3f} | "
                      f"{scores['en hit@3']:.3f} | "
                      f"{scores['zh hit@3']:.3f} | {scores['paraphrased hit@3']:.3f} | {scores['row to model']:.3f} | {result['table_chunks']} | {result['parse_s']:.0f} | "
                      f"{result['ingest_s']:.0f} |")
    if args.misses:
        for label, result in runs.items():
            print(f"\nmissed at 3, {label}:")
            for miss in result["misses"]:
                print(f"- {miss}")
    return 0


def run(paths: list[Path], questions: list[dict], config: RagConfig) -> dict:
    cache = DEFAULT_HOME / "lab" / "tables-embed-cache.sqlite3"
    with tempfile.TemporaryDirectory(prefix="citewise-tables-") as tmp:
        config = replace(config, storage=replace(config.storage, data_dir=tmp, chroma_mode="embedded"))
        if cache.exists():
            shutil.copy(cache, Path(tmp) / "embed_cache.sqlite3")
        store = build_store(config, build_router(config))
        started = time.perf_counter()
        ids = {}
        parse_s = 0.0
        for path in paths:
            result = Ingestor(store, config).ingest_path(path)
            if not result.ok:
                raise RuntimeError(f"{path.name}: {result.error}")
            ids[result.doc_id] = path.name
            parse_s += result.timings.get("parse", 0.0)
        ingest_s = time.perf_counter() - started
        table_chunks = sum(1 for doc_id in ids for chunk in store.chunks(doc_id) if chunk.kind == "table")
        ranked_config, _ = mode_settings("default", config)
        engine = build_engine(ranked_config, store=store, with_llm=False)  # the app's retrieval, ranked to depth 20
        # and as the answer reads it: the app's sources (top_k, budget in the bundled model's tokens, evidence)
        answering = answer_context_engine(config, store, model_token_counter(config))
        given: dict[str, int | None] = {}
        ranks: dict[str, int | None] = {}
        row_ranks: dict[str, int | None] = {}
        fact_ranks: dict[str, int | None] = {}
        for question in questions:
            nodes = engine.search(question["question"]).nodes
            found = [_hit(node.node.metadata, node.node.get_content(), question, ids) for node in nodes]
            ranks[question["id"]] = _first(found, lambda hit: hit[0] and bool(hit[1]))
            row_ranks[question["id"]] = _first(found, lambda hit: hit[0] and hit[1] == "row")
            fact_ranks[question["id"]] = _first(found, lambda hit: hit[1] == "row")
            sources = answering.search(question["question"]).nodes
            given[question["id"]] = _first([_hit(n.node.metadata, n.node.get_content(), question, ids) for n in sources],
                                           lambda hit: hit[1] == "row")
            if EXPLAIN and not _within(ranks[question["id"]], 3):
                print(f"\n{question['id']} p{question['page']} {question['question']} "
                      f"[{question['row']} = {question['answer']}] rank {ranks[question['id']]}")
                for node in nodes[:3]:
                    meta = node.node.metadata
                    print(f"   {ids.get(meta['doc_id'], '?')[:12]} p{meta['page_start']} {meta.get('kind')} "
                          f"{node.score:.3f} {node.node.get_content()[:150]!r}")
        store.close()
        cache.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(tmp) / "embed_cache.sqlite3", cache)
    result = {"ingest_s": round(ingest_s, 1), "parse_s": round(parse_s, 1), "table_chunks": table_chunks, "ranks": ranks, "row_ranks": row_ranks,
              "given": given,
              "misses": [f"{q['split']} {q['id']} p{q['page']} {q['question']}" for q in questions
                         if not _within(ranks[q["id"]], 3)]}
    for split in SPLITS:
        subset = [q for q in questions if split in ("all", q["split"])]
        scores = {"questions": len(subset), "row intact@3": _share(subset, row_ranks, 3),
                  "fact@3": _share(subset, fact_ranks, 3), "row to model": _share(subset, given, config.retrieval.top_k)}
        scores.update({f"hit@{k}": _share(subset, ranks, k) for k in KS})
        for lang in ("en", "zh"):
            scores[f"{lang} hit@3"] = _share([q for q in subset if _language(q) == lang], ranks, 3)
        scores["paraphrased hit@3"] = _share([q for q in subset if q.get("paraphrased")], ranks, 3)
        result[split] = scores
    return result


def _find_pdf(name: str, data_root: Path) -> Path | None:
    shared = next((data_root / "pdfs").glob(f"*/{name}"), None)
    fetched = DEBIAN_DOCS_DIR / name
    return shared or (fetched if fetched.is_file() else None)


def _hit(metadata: dict, text: str, question: dict, ids: dict[str, str]) -> tuple[bool, str]:
    """(on the question's page, "row" | "passage" | ""): label and value on one line, both anywhere in
    the passage, or not both there; a passage of another document is never a hit."""
    if ids.get(metadata.get("doc_id")) != question["file"]:
        return False, ""
    on_page = int(metadata.get("page_start", 0)) <= question["page"] <= int(metadata.get("page_end", 0))
    row, answer = _squeeze(question["row"]), _squeeze(question["answer"])
    if any(row in line and answer in line for line in map(_squeeze, text.split("\n"))):
        return on_page, "row"
    squeezed = _squeeze(text)
    return on_page, "passage" if row in squeezed and answer in squeezed else ""


def _language(question: dict) -> str:
    return "zh" if re.search(r"[\u4e00-\u9fff]", question["question"]) else "en"


def _first(found: list[tuple[bool, str]], test) -> int | None:
    return next((rank for rank, hit in enumerate(found, start=1) if test(hit)), None)


def _squeeze(text: str) -> str:
    """Whitespace removed, and a cell's "|" as printed (Markdown escapes it in the chunk)."""
    return re.sub(r"\s+", "", text).replace("\\|", "|")


def _within(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def _share(questions: list[dict], ranks: dict[str, int | None], k: int) -> float:
    return sum(_within(ranks[q["id"]], k) for q in questions) / len(questions) if questions else 0.0

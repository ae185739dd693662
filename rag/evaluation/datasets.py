"""Loaders that turn evaluation sets into one shape: corpus, queries and graded qrels.

Formats:
- BEIR folder: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
  ``text``), ``qrels/<split>.tsv`` (header, then ``query-id  corpus-id  score``). Only queries that
  have qrels in the split are kept, as BEIR's own loader does.
- SQuAD-style JSON (SQuAD v1.1, CMRC 2018): each paragraph ``context`` is a document with id
  ``f"{article_idx}-{para_idx}"`` and the article title; each question's gold is its paragraph.
- CSV with ``question``, ``expected_document`` and ``expected_page`` columns (for PDF question sets;
  the corpus is the PDFs themselves, so ``corpus`` is empty and gold pages go to ``gold_pages``).

Real sets have bad items: empty questions, repeated ids, qrels naming documents the corpus does not
hold. A loader never fails on one of them: it leaves the item out and counts it under a reason in
``EvalDataset.skipped``, which every report prints. Only a file that cannot be read at all raises.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

from rag.evaluation.sets import EvalDataset

logger = logging.getLogger(__name__)

NAMED_DATASETS = {"scifact": "beir-scifact", "squad": "squad-v1.1-dev.json", "cmrc2018": "cmrc2018-dev.json"}
# sets made from a named set by converting its script with OpenCC (rag.evaluation.splits.to_traditional_set)
DERIVED_DATASETS = {"cmrc2018-tw": ("cmrc2018", "s2twp")}
EMPTY_QUESTION = "empty question"
DUPLICATE_ID = "duplicate question id"
MISSING_DOCUMENT = "qrels naming a document not in the corpus"
NO_RELEVANT = "no relevant document in the corpus"
DEFAULT_DATA_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"  # <repo>/../shared/data


def document_text(entry: dict[str, str]) -> str:
    """A BEIR corpus entry as the text we index: its title, then its text."""
    return "\n".join(part for part in (entry.get("title", ""), entry.get("text", "")) if part)


def load_beir(folder: str | Path, split: str = "test") -> EvalDataset:
    """Load a BEIR folder; only queries judged in ``qrels/<split>.tsv`` are kept."""
    folder = Path(folder)
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not path.is_file():
            raise FileNotFoundError(f"BEIR folder {folder}: missing {path.relative_to(folder)}")
    skipped: Counter[str] = Counter()
    corpus: dict[str, dict[str, str]] = {}
    for row in _read_jsonl(folder / "corpus.jsonl"):
        doc_id = str(row.get("_id", "")).strip()
        if not doc_id or doc_id in corpus:
            skipped["corpus entry with an empty or repeated _id"] += 1
            continue
        corpus[doc_id] = {"title": str(row.get("title") or ""), "text": str(row.get("text") or "")}
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t"), start=1):
            if len(row) < 3 or not row[2].strip().lstrip("-").isdigit():
                if number > 1 and any(cell.strip() for cell in row):  # line 1 is the header
                    skipped["unreadable qrels line"] += 1
                continue
            qid, doc_id = row[0].strip(), row[1].strip()
            if doc_id not in corpus:
                skipped[MISSING_DOCUMENT] += 1
                continue
            qrels.setdefault(qid, {})[doc_id] = int(row[2])
    all_queries: dict[str, str] = {}
    for row in _read_jsonl(folder / "queries.jsonl"):
        qid = str(row.get("_id", "")).strip()
        if qid in all_queries:
            skipped[DUPLICATE_ID] += 1
            continue
        all_queries[qid] = str(row.get("text") or "")
    queries: dict[str, str] = {}
    for qid, judged in qrels.items():
        if qid not in all_queries:
            skipped["judged question missing from queries.jsonl"] += 1
        elif not all_queries[qid].strip():
            skipped[EMPTY_QUESTION] += 1
        elif not any(grade > 0 for grade in judged.values()):
            skipped[NO_RELEVANT] += 1
        else:
            queries[qid] = all_queries[qid]
    if skipped:
        logger.warning("%s: %s", folder, dict(skipped))
    return EvalDataset(name=folder.name, corpus=corpus, queries=queries, qrels={q: qrels[q] for q in queries},
                       skipped=dict(skipped), split=split)


def load_squad(path: str | Path) -> EvalDataset:
    """Load SQuAD-style JSON (SQuAD v1.1, CMRC 2018): paragraphs are documents, questions queries."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    articles = data["data"] if isinstance(data, dict) else data
    corpus: dict[str, dict[str, str]] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    skipped: Counter[str] = Counter()
    for article_idx, article in enumerate(articles):
        title = str(article.get("title") or "")
        for para_idx, paragraph in enumerate(article.get("paragraphs", [])):
            doc_id = f"{article_idx}-{para_idx}"
            corpus[doc_id] = {"title": title, "text": str(paragraph.get("context") or "")}
            for qa_idx, qa in enumerate(paragraph.get("qas", [])):
                qid = str(qa.get("id") or f"{doc_id}-{qa_idx}")
                question = str(qa.get("question") or "")
                if qid in queries:  # a repeated id would overwrite its first question's gold
                    skipped[DUPLICATE_ID] += 1
                elif not question.strip():
                    skipped[EMPTY_QUESTION] += 1
                elif not corpus[doc_id]["text"].strip():
                    skipped["question on an empty paragraph"] += 1
                else:
                    queries[qid] = question
                    qrels[qid] = {doc_id: 1}
    if skipped:
        logger.warning("%s: %s", path, dict(skipped))
    return EvalDataset(name=path.stem, corpus=corpus, queries=queries, qrels=qrels, skipped=dict(skipped))


def load_csv(path: str | Path) -> EvalDataset:
    """Load ``question, expected_document, expected_page`` rows (header names are case-insensitive).

    ``expected_page`` may be empty or list several pages (``"3; 4"``). An ``id`` column, if present,
    gives the query ids; otherwise they are ``q1, q2, ...`` in row order.
    """
    path = Path(path)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    pages: dict[str, list[int]] = {}
    skipped: Counter[str] = Counter()
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = {(name or "").strip().lower(): name for name in reader.fieldnames or []}
        for needed in ("question", "expected_document"):
            if needed not in columns:
                raise ValueError(f"{path}: missing column {needed!r} (have {list(columns)})")
        for number, row in enumerate(reader, start=1):
            question = (row.get(columns["question"]) or "").strip()
            if not question:
                skipped[EMPTY_QUESTION] += 1
                continue
            qid = (row.get(columns["id"]) or "").strip() if "id" in columns else ""
            qid = qid or f"q{number}"
            if qid in queries:
                skipped[DUPLICATE_ID] += 1
                continue
            queries[qid] = question
            qrels[qid] = {(row.get(columns["expected_document"]) or "").strip(): 1}
            page_text = (row.get(columns["expected_page"]) or "") if "expected_page" in columns else ""
            pages[qid] = [int(p) for p in re.findall(r"\d+", page_text)]
    return EvalDataset(name=path.stem, corpus={}, queries=queries, qrels=qrels, gold_pages=pages,
                       skipped=dict(skipped))


def load_dataset(name_or_path: str | Path, data_root: str | Path | None = None, *,
                 split: str | None = None) -> EvalDataset:
    """Load a named set (``scifact``, ``squad``, ``cmrc2018``, ``cmrc2018-tw``) from ``data_root``, or a path.

    A path is read by its kind: a folder as BEIR, ``.json`` as SQuAD-style, ``.csv`` as CSV.

    Args:
        name_or_path: A known name or a path.
        data_root: Where named sets live. Defaults to ``$RAG_EVAL_DATA`` or ``<repo>/../shared/data``.
        split: Which questions (``rag.evaluation.splits``): a BEIR qrels name (``train``, ``test``),
            or ``tune`` / ``report`` (the halves by article of a SQuAD-style set), or ``all``.
            Defaults to BEIR ``test`` and every question of other sets.
    """
    from rag.evaluation.splits import select_split, to_traditional_set

    name = str(name_or_path).lower()
    if name in DERIVED_DATASETS:
        base, conversion = DERIVED_DATASETS[name]
        # split first, on the source's own titles, so both scripts hold the same questions per half
        return replace(to_traditional_set(load_dataset(base, data_root, split=split), conversion), name=name)
    root = Path(data_root or os.environ.get("RAG_EVAL_DATA") or DEFAULT_DATA_ROOT)
    if split and split not in ("tune", "report", "all"):
        return _load_path(name_or_path, root, beir_split=split)
    return select_split(_load_path(name_or_path, root), split or "all")


def _load_path(name_or_path: str | Path, root: Path, *, beir_split: str = "test") -> EvalDataset:
    name = str(name_or_path)
    if name.lower() in NAMED_DATASETS:
        path = root / NAMED_DATASETS[name.lower()]
        label = name.lower()
    else:
        path, label = Path(name_or_path), ""
    if path.is_dir():
        dataset = load_beir(path, beir_split)
    elif beir_split != "test":
        raise ValueError(f"unknown split {beir_split!r} for {path.name}: use tune / report (halves by article) or "
                         "all; only a BEIR folder has named qrels splits such as train and test")
    elif path.suffix.lower() == ".json":
        dataset = load_squad(path)
    elif path.suffix.lower() == ".csv":
        dataset = load_csv(path)
    elif not path.exists():
        raise FileNotFoundError(f"no dataset at {path} (known names: {', '.join(NAMED_DATASETS)})")
    else:
        raise ValueError(f"{path}: expected a BEIR folder, a .json (SQuAD-style) or a .csv file")
    return replace(dataset, name=label) if label else dataset


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{number}: invalid JSON ({exc.msg})") from None
    return rows

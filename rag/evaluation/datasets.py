"""Loaders that turn evaluation sets into one shape: corpus, queries and graded qrels.

Formats:
- BEIR folder: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
  ``text``), ``qrels/<split>.tsv`` (header, then ``query-id  corpus-id  score``). Only queries that
  have qrels in the split are kept, as BEIR's own loader does.
- SQuAD-style JSON (SQuAD v1.1, CMRC 2018): each paragraph ``context`` is a document with id
  ``f"{article_idx}-{para_idx}"`` and the article title; each question's gold is its paragraph.
- CSV with ``question``, ``expected_document`` and ``expected_page`` columns (for PDF question sets;
  the corpus is the PDFs themselves, so ``corpus`` is empty and gold pages go to ``gold_pages``).
"""

from __future__ import annotations

import csv
import json
import logging
import os
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

logger = logging.getLogger(__name__)

NAMED_DATASETS = {"scifact": "beir-scifact", "squad": "squad-v1.1-dev.json", "cmrc2018": "cmrc2018-dev.json"}
DEFAULT_DATA_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"  # the repo root's ../shared/data


@dataclass
class EvalDataset:
    """An evaluation set.

    Args:
        name: A short label (dataset name or file stem).
        corpus: doc_id -> {"title", "text"}.
        queries: qid -> question text.
        qrels: qid -> {doc_id: grade}; grade > 0 means relevant.
        gold_pages: qid -> expected 1-based pages (CSV sets only).
    """

    name: str
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    gold_pages: dict[str, list[int]] = field(default_factory=dict)

    def subset(self, n: int, seed: int = 0) -> EvalDataset:
        """The same corpus with ``n`` queries drawn at random (reproducibly); for quick runs."""
        if n >= len(self.queries):
            return self
        chosen = sorted(random.Random(seed).sample(sorted(self.queries), n))
        return replace(self, queries={q: self.queries[q] for q in chosen},
                       qrels={q: self.qrels[q] for q in chosen if q in self.qrels},
                       gold_pages={q: self.gold_pages[q] for q in chosen if q in self.gold_pages})

    def __repr__(self) -> str:
        return (f"EvalDataset(name={self.name!r}, docs={len(self.corpus)}, queries={len(self.queries)}, "
                f"qrels={sum(len(v) for v in self.qrels.values())})")


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
    corpus = {str(row["_id"]): {"title": row.get("title") or "", "text": row.get("text") or ""}
              for row in _read_jsonl(folder / "corpus.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header and header[-1].strip().lstrip("-").isdigit():  # no header after all
            qrels.setdefault(header[0], {})[header[1]] = int(header[2])
        for row in reader:
            if len(row) >= 3:
                qrels.setdefault(row[0].strip(), {})[row[1].strip()] = int(row[2])
    all_queries = {str(row["_id"]): row.get("text") or "" for row in _read_jsonl(folder / "queries.jsonl")}
    missing = [q for q in qrels if q not in all_queries]
    if missing:
        logger.warning("%s: %d judged queries are missing from queries.jsonl", folder, len(missing))
    queries = {q: all_queries[q] for q in qrels if q in all_queries}
    return EvalDataset(name=folder.name, corpus=corpus, queries=queries,
                       qrels={q: qrels[q] for q in queries})


def load_squad(path: str | Path) -> EvalDataset:
    """Load SQuAD-style JSON (SQuAD v1.1, CMRC 2018): paragraphs are documents, questions queries."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    articles = data["data"] if isinstance(data, dict) else data
    corpus: dict[str, dict[str, str]] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for article_idx, article in enumerate(articles):
        title = article.get("title") or ""
        for para_idx, paragraph in enumerate(article.get("paragraphs", [])):
            doc_id = f"{article_idx}-{para_idx}"
            corpus[doc_id] = {"title": title, "text": paragraph.get("context") or ""}
            for qa_idx, qa in enumerate(paragraph.get("qas", [])):
                qid = str(qa.get("id") or f"{doc_id}-{qa_idx}")
                if qid in queries:  # ids are unique in both known sets; never let one overwrite
                    qid = f"{qid}#{doc_id}-{qa_idx}"
                queries[qid] = qa.get("question") or ""
                qrels[qid] = {doc_id: 1}
    return EvalDataset(name=path.stem, corpus=corpus, queries=queries, qrels=qrels)


def load_csv(path: str | Path) -> EvalDataset:
    """Load ``question, expected_document, expected_page`` rows (header names are case-insensitive).

    ``expected_page`` may be empty or list several pages (``"3; 4"``). An ``id`` column, if present,
    gives the query ids; otherwise they are ``q1, q2, ...`` in row order.
    """
    path = Path(path)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    pages: dict[str, list[int]] = {}
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = {(name or "").strip().lower(): name for name in reader.fieldnames or []}
        for needed in ("question", "expected_document"):
            if needed not in columns:
                raise ValueError(f"{path}: missing column {needed!r} (have {list(columns)})")
        for number, row in enumerate(reader, start=1):
            question = (row.get(columns["question"]) or "").strip()
            if not question:
                continue
            qid = (row.get(columns["id"]) or "").strip() if "id" in columns else ""
            qid = qid or f"q{number}"
            queries[qid] = question
            qrels[qid] = {(row.get(columns["expected_document"]) or "").strip(): 1}
            page_text = (row.get(columns["expected_page"]) or "") if "expected_page" in columns else ""
            pages[qid] = [int(p) for p in re.findall(r"\d+", page_text)]
    return EvalDataset(name=path.stem, corpus={}, queries=queries, qrels=qrels, gold_pages=pages)


def load_dataset(name_or_path: str | Path, data_root: str | Path | None = None) -> EvalDataset:
    """Load a named set (``scifact``, ``squad``, ``cmrc2018``) from ``data_root``, or a path.

    A path is read by its kind: a folder as BEIR, ``.json`` as SQuAD-style, ``.csv`` as CSV.

    Args:
        name_or_path: A known name or a path.
        data_root: Where named sets live. Defaults to ``$RAG_EVAL_DATA`` or ``<repo>/../shared/data``.
    """
    root = Path(data_root or os.environ.get("RAG_EVAL_DATA") or DEFAULT_DATA_ROOT)
    name = str(name_or_path)
    if name.lower() in NAMED_DATASETS:
        path = root / NAMED_DATASETS[name.lower()]
        label = name.lower()
    else:
        path, label = Path(name_or_path), ""
    if path.is_dir():
        dataset = load_beir(path)
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

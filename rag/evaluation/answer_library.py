"""The evaluation library for answer quality: sampled SQuAD-format questions written into small PDFs.

For each sampled question a PDF is written with PyMuPDF, one paragraph per page: the question's own
paragraph plus a few distractor paragraphs (same article first), so pages mean something. A further
set of questions has its paragraph deliberately left out of the index (only its distractors are
ingested) to measure abstention.
"""

from __future__ import annotations

import json
import logging
import random
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pymupdf

from rag.config import RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, NAMED_DATASETS

logger = logging.getLogger(__name__)

_PAGE = pymupdf.paper_rect("a4")
_MARGIN = 60.0
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass
class QAItem:
    """One question: gold answers (plausible ones when ``impossible``), its paragraph and article."""

    qid: str
    question: str
    answers: list[str]
    para_key: str
    article: int
    impossible: bool = False  # the paragraph is in the library but does not hold the answer


# -- metrics (SQuAD v1.1 / CMRC 2018 evaluation scripts) ----------------------------------------

def load_squad_items(path: Path) -> tuple[list[QAItem], dict[str, str], dict[int, list[str]]]:
    """(questions, paragraph key -> text, article -> paragraph keys) from a SQuAD-format JSON."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    items, paragraphs, by_article = [], {}, {}
    for a, article in enumerate(data):
        for p, paragraph in enumerate(article["paragraphs"]):
            key = f"{a}-{p}"
            paragraphs[key] = paragraph["context"]
            by_article.setdefault(a, []).append(key)
            for qa in paragraph["qas"]:
                answers = [ans["text"] for ans in qa.get("answers", []) if ans.get("text")]
                if answers:
                    items.append(QAItem(str(qa["id"]), qa["question"], answers, key, a))
    return items, paragraphs, by_article


def write_paragraph_pdf(path: Path, paragraphs: list[str]) -> None:
    """One paragraph per page; Chinese text is wrapped by character in the builtin ``china-s`` font."""
    doc = pymupdf.open()
    width = _PAGE.width - 2 * _MARGIN
    for text in paragraphs:
        page = doc.new_page(width=_PAGE.width, height=_PAGE.height)
        if _CJK.search(text):
            y = _MARGIN + 12
            for line in _wrap_cjk(text, 10.5, width):
                if y > _PAGE.height - _MARGIN:
                    break
                page.insert_text((_MARGIN, y), line, fontname="china-s", fontsize=10.5)
                y += 15
        else:
            rect = pymupdf.Rect(_MARGIN, _MARGIN, _PAGE.width - _MARGIN, _PAGE.height - _MARGIN)
            for size in (11, 9, 7):
                if page.insert_textbox(rect, text, fontname="helv", fontsize=size) >= 0:
                    break
                page.clean_contents()
                page = _replace_page(doc, page)
    doc.save(path, garbage=3, deflate=True)
    doc.close()


def _replace_page(doc: Any, page: Any) -> Any:
    number = page.number
    doc.delete_page(number)
    return doc.new_page(number, width=_PAGE.width, height=_PAGE.height)


def _wrap_cjk(text: str, size: float, width: float) -> list[str]:
    lines, line = [], ""
    for char in " ".join(text.split()):
        if line and pymupdf.get_text_length(line + char, fontname="china-s", fontsize=size) > width:
            lines.append(line)
            line = ""
        line += char
    return [*lines, line] if line else lines


# -- the run ----------------------------------------------------------------------------------

def resolve_qa_dataset(name: str) -> Path:
    """The SQuAD-format file behind ``squad``, ``cmrc2018`` or a path.

    Raises:
        FileNotFoundError: with a message naming what was looked for.
    """
    path = DEFAULT_DATA_ROOT / NAMED_DATASETS[name] if name in NAMED_DATASETS else Path(name)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file {path} not found (squad, cmrc2018 or a SQuAD-format JSON path)")
    return path


@dataclass
class QALibrary:
    """The evaluation library: PDFs ingested into a store of their own, and the questions asked of it.

    Args:
        chosen: Questions whose paragraph is in the index.
        held_out: Questions whose paragraph was deliberately left out (their answer is not indexed).
        gold_locations: Paragraph key -> every (doc_id, page) that holds it.
    """

    store: Any
    chosen: list[QAItem]
    held_out: list[QAItem]
    gold_locations: dict[str, set[tuple[str, int]]]
    ingest_s: float


def build_library(path: Path, config: RagConfig, *, n: int, unanswerable: int, distractors: int, seed: int,
                  workdir: Path, router: Any = None) -> QALibrary:
    """Sample ``n`` answerable and ``unanswerable`` left-out questions (distinct paragraphs), write one PDF
    per question (its paragraph, unless left out, among ``distractors`` others of the same article) and
    ingest them all into a store under ``workdir``."""
    from rag.ingest.ingestor import Ingestor

    items, paragraphs, by_article = load_squad_items(path)
    rng = random.Random(seed)
    rng.shuffle(items)
    chosen: list[QAItem] = []
    held_out: list[QAItem] = []
    used_paragraphs: set[str] = set()
    for item in items:  # distinct paragraphs, so a held-out paragraph never reaches the index
        if item.para_key in used_paragraphs:
            continue
        if len(chosen) < n:
            chosen.append(item)
        elif len(held_out) < unanswerable:
            held_out.append(item)
        else:
            break
        used_paragraphs.add(item.para_key)
    excluded = {item.para_key for item in held_out}

    store = _new_store(config, workdir, router)
    ingestor = Ingestor(store, store.config)
    gold_locations: dict[str, set[tuple[str, int]]] = {}
    started = time.perf_counter()
    for index, item in enumerate(chosen + held_out):
        pool = [k for k in by_article[item.article] if k != item.para_key and k not in excluded]
        if len(pool) < distractors:
            pool += [k for k in rng.sample(sorted(paragraphs), distractors * 3) if k not in excluded and k not in pool]
        pages = rng.sample(pool, min(distractors, len(pool)))
        if item.para_key not in excluded:
            pages.insert(rng.randrange(len(pages) + 1), item.para_key)
        pdf = workdir / f"q{index:03d}.pdf"
        write_paragraph_pdf(pdf, [paragraphs[k] for k in pages])
        result = ingestor.ingest_path(pdf)
        if not result.ok:
            logger.warning("ingest of %s failed: %s", pdf.name, result.error)
            continue
        for number, key in enumerate(pages, start=1):
            gold_locations.setdefault(key, set()).add((result.doc_id, number))
    # a left-out question whose answer is stated elsewhere in the library is answerable after all: drop it
    indexed = [paragraphs[k] for k in gold_locations]
    kept = [item for item in held_out if not _stated_anywhere(item.answers, indexed)]
    if len(kept) < len(held_out):
        logger.info("dropped %d left-out questions whose gold answer appears in the library", len(held_out) - len(kept))
    return QALibrary(store, chosen, kept, gold_locations, round(time.perf_counter() - started, 1))


def _stated_anywhere(answers: list[str], texts: list[str]) -> bool:
    from rag.evaluation.answer_metrics import contains_answer

    chinese = bool(_CJK.search(" ".join(answers)))
    return any(contains_answer(text, answers, chinese) for text in texts)


def _new_store(config: RagConfig, workdir: Path, router: Any) -> Any:
    from rag.index.store import DocumentStore
    from rag.runtime import build_router

    config = replace(config, storage=replace(config.storage, data_dir=str(workdir / "data"))).validate()
    return DocumentStore(config, router or build_router(config))


def build_set_library(qa_set: Any, config: RagConfig, *, n: int, unanswerable: int, seed: int, workdir: Path,
                      distractors: int = 24, per_pdf: int = 4, router: Any = None) -> QALibrary:
    """A library for a set with real unanswerables (``rag.evaluation.unanswerable.QASet``): ``n`` answerable
    and ``unanswerable`` questions sampled with ``seed`` (at most 2 per paragraph), every paragraph they ask
    about kept in the library (unanswerable ones too), plus the set's other core paragraphs and
    ``distractors`` others, ``per_pdf`` paragraphs per PDF. ``held_out`` holds the unanswerable questions."""
    from rag.ingest.ingestor import Ingestor

    rng = random.Random(seed)
    items = list(qa_set.items)
    rng.shuffle(items)
    per_paragraph: dict[str, int] = {}
    chosen: list[QAItem] = []
    impossible: list[QAItem] = []
    for item in items:
        bucket, limit = (impossible, unanswerable) if item.impossible else (chosen, n)
        if len(bucket) >= limit or per_paragraph.get(item.para_key, 0) >= 2:
            continue
        bucket.append(item)
        per_paragraph[item.para_key] = per_paragraph.get(item.para_key, 0) + 1
    asked = list(dict.fromkeys(i.para_key for i in chosen + impossible))
    extra = [k for k in qa_set.core if k not in per_paragraph]
    extra = rng.sample(extra, min(len(extra), max(distractors, 0))) if len(qa_set.core) > 60 else extra
    others = rng.sample(qa_set.distractors, min(len(qa_set.distractors), distractors))
    keys = asked + extra + others
    rng.shuffle(keys)
    store = _new_store(config, workdir, router)
    ingestor = Ingestor(store, store.config)
    gold_locations: dict[str, set[tuple[str, int]]] = {}
    started = time.perf_counter()
    for index in range(0, len(keys), per_pdf):
        pages = keys[index:index + per_pdf]
        pdf = workdir / f"{qa_set.name}-{qa_set.split}-{index // per_pdf:03d}.pdf"
        write_paragraph_pdf(pdf, [qa_set.paragraphs[k] for k in pages])
        result = ingestor.ingest_path(pdf)
        if not result.ok:
            logger.warning("ingest of %s failed: %s", pdf.name, result.error)
            continue
        for number, key in enumerate(pages, start=1):
            gold_locations.setdefault(key, set()).add((result.doc_id, number))
    return QALibrary(store, chosen, impossible, gold_locations, round(time.perf_counter() - started, 1))



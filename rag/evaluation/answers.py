"""``python -m rag eval-answers``: answer quality over SQuAD v1.1 / CMRC 2018 built into small PDFs.

For each sampled question a PDF is written with PyMuPDF, one paragraph per page: the question's own
paragraph plus a few distractor paragraphs (same article first), so pages mean something. A further
set of questions has its paragraph deliberately left out of the index (only its distractors are
ingested) to measure abstention. Reported per LLM backend:

* ``em`` / ``f1``: SQuAD-style normalisation (lower case, no punctuation/articles, word tokens); for
  Chinese, CMRC-style character-level F1. ``contains``: the gold answer appears in the answer.
* ``citation_precision``: share of citations whose cited chunk contains a gold answer.
* ``highlight_rate``: share of citations with a highlight on a page of the cited chunk;
  ``highlight_gold_page``: share of answered questions with a highlight on the gold page.
* ``abstention``: share of left-out questions answered with "not found in your documents".
* ``ttft_ms`` (mean, p50, first = cold prefix cache) and ``tokens_per_s``.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import string
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import mean, median
from typing import Any

import pymupdf

from rag.answer.citations import strip_markers
from rag.config import DEFAULT_HOME, RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, NAMED_DATASETS
from rag.text.language import detect_language

logger = logging.getLogger(__name__)

_PAGE = pymupdf.paper_rect("a4")
_MARGIN = 60.0
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ZH_PUNCT = set("，。！？、；：“”‘’（）《》【】—…·「」『』〈〉～")


@dataclass
class QAItem:
    qid: str
    question: str
    answers: list[str]
    para_key: str
    article: int


# -- metrics (SQuAD v1.1 / CMRC 2018 evaluation scripts) ----------------------------------------

def normalize_en(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def normalize_zh(text: str) -> str:
    return "".join(ch for ch in text.lower() if not ch.isspace() and ch not in _ZH_PUNCT
                   and ch not in set(string.punctuation))


def _tokens(text: str, chinese: bool) -> list[str]:
    return list(normalize_zh(text)) if chinese else normalize_en(text).split()


def exact_match(prediction: str, golds: list[str], chinese: bool) -> float:
    norm = normalize_zh if chinese else normalize_en
    return float(any(norm(prediction) == norm(g) for g in golds))


def f1_score(prediction: str, golds: list[str], chinese: bool) -> float:
    best = 0.0
    predicted = _tokens(prediction, chinese)
    for gold in golds:
        wanted = _tokens(gold, chinese)
        common = sum((Counter(predicted) & Counter(wanted)).values())
        if common:
            precision, recall = common / len(predicted), common / len(wanted)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def contains_answer(text: str, golds: list[str], chinese: bool) -> bool:
    norm = normalize_zh if chinese else normalize_en
    haystack = norm(text)
    return any(norm(g) and norm(g) in haystack for g in golds)


# -- data -------------------------------------------------------------------------------------

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


def run_eval_answers(args: argparse.Namespace, config: RagConfig) -> int:
    try:
        path = resolve_qa_dataset(args.dataset)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unanswerable = args.n // 3 if args.unanswerable is None else args.unanswerable
    with tempfile.TemporaryDirectory(prefix="citewise-eval-answers-") as tmp:
        report = evaluate_answers(path, config, n=args.n, unanswerable=unanswerable, distractors=args.distractors,
                                  seed=args.seed, workdir=Path(tmp), also_server=args.also_server)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(format_report(report))
    return 0


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
    from rag.runtime import build_router
    from rag.index.store import DocumentStore

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

    config = replace(config, storage=replace(config.storage, data_dir=str(workdir / "data"))).validate()
    store = DocumentStore(config, router or build_router(config))
    ingestor = Ingestor(store, config)
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
    return QALibrary(store, chosen, held_out, gold_locations, round(time.perf_counter() - started, 1))


def evaluate_answers(path: Path, config: RagConfig, *, n: int, unanswerable: int, distractors: int, seed: int,
                     workdir: Path, router: Any = None, also_server: bool = False,
                     llm_factory: Any = None) -> dict[str, Any]:
    """Build the PDFs, ingest them, ask every question with each backend and aggregate the metrics."""
    library = build_library(path, config, n=n, unanswerable=unanswerable, distractors=distractors, seed=seed,
                            workdir=workdir, router=router)
    store = library.store
    backends = _backends(config, also_server, llm_factory)
    report: dict[str, Any] = {"dataset": path.name, "answerable": len(library.chosen),
                              "unanswerable": len(library.held_out), "distractors_per_pdf": distractors,
                              "documents": len(store.documents()), "chunks": len(store.keywords),
                              "ingest_s": library.ingest_s, "backends": {}}
    for name, build in backends:
        try:
            engine = _engine(store, build(), name)
        except Exception as exc:  # noqa: BLE001 - report the backend as unavailable
            report["backends"][name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        report["backends"][name] = _score_backend(engine, config, library.chosen, library.held_out,
                                                  library.gold_locations, store)
    store.close()
    return report


def _backends(config: RagConfig, also_server: bool, llm_factory: Any) -> list[tuple[str, Any]]:
    if llm_factory is not None:
        return [("given", llm_factory)]
    from rag.models.llms import OpenAICompatibleLLM, load_embedded_llm

    backends: list[tuple[str, Any]] = [
        (f"embedded:{config.llm.embedded_model}", lambda: load_embedded_llm(config.llm, config.generation, DEFAULT_HOME))]
    if config.llm.backend == "openai" or also_server:
        def remote() -> Any:
            llm = OpenAICompatibleLLM(
                base_url=config.llm.base_url, model=config.llm.model, api_key_env=config.llm.api_key_env,
                connect_timeout_s=config.llm.connect_timeout_s, request_timeout_s=config.llm.request_timeout_s,
                first_response_timeout_s=config.llm.first_response_timeout_s,
                temperature=config.generation.temperature, max_tokens=config.generation.max_answer_tokens)
            llm.health_check()
            return llm
        backends.append((f"openai:{config.llm.model}@{config.llm.base_url}", remote))
    return backends


def _engine(store: Any, llm: Any, name: str) -> Any:
    from rag.answer.engine import AnswerEngine
    from rag.retrieval.pipeline import RetrievalPipeline

    return AnswerEngine(RetrievalPipeline(store), store, llm, embedder_for_checks=store.router,
                        llm_backend=name.split(":")[0])


def _score_backend(engine: Any, config: RagConfig, chosen: list[QAItem], held_out: list[QAItem],
                   gold_locations: dict[str, set[tuple[str, int]]], store: Any) -> dict[str, Any]:
    ems, f1s, contains, abstained_answerable = [], [], [], 0
    citations = precise = highlighted = 0
    gold_page_hits, answered = 0, 0
    ttfts, speeds, errors, rows = [], [], 0, []
    for item in chosen:
        result = engine.answer(item.question, config)
        chinese = detect_language(item.question) == "zh"
        text = strip_markers(result.answer)
        errors += bool(result.error)
        ems.append(0.0 if result.abstained else exact_match(text, item.answers, chinese))
        f1s.append(0.0 if result.abstained else f1_score(text, item.answers, chinese))
        contains.append(float(not result.abstained and contains_answer(text, item.answers, chinese)))
        abstained_answerable += result.abstained
        chunk_texts = {c.chunk_id: c.text for c in store.keywords.get([c.chunk_id for c in result.citations]).values()}
        gold = gold_locations.get(item.para_key, set())
        hit = False
        for citation in result.citations:
            citations += 1
            precise += contains_answer(chunk_texts.get(citation.chunk_id, citation.text), item.answers, chinese)
            source = next((s for s in result.sources if s.n == citation.n), None)
            pages = [p for p, rects in citation.pages if rects]
            if pages and (source is None or all(source.page_start <= p <= source.page_end for p in pages)):
                highlighted += 1
            hit = hit or any((citation.doc_id, p) in gold for p in pages)
        if not result.abstained:
            answered += 1
            gold_page_hits += hit
        ttfts.append(result.timings.get("ttft_ms", 0.0))
        if result.timings.get("tokens_per_s"):
            speeds.append(result.timings["tokens_per_s"])
        rows.append({"qid": item.qid, "question": item.question, "gold": item.answers[:3], "answer": result.answer,
                     "abstained": result.abstained, "f1": round(f1s[-1], 3),
                     "citations": [(c.n, c.page) for c in result.citations], "gold_page_hit": hit,
                     "ttft_ms": result.timings.get("ttft_ms"), "tokens": result.timings.get("tokens"),
                     "tokens_per_s": result.timings.get("tokens_per_s"),
                     "prompt_tokens_evaluated": result.timings.get("prompt_tokens_evaluated"),
                     "context_tokens": result.timings.get("context_tokens"), "error": result.error,
                     "answerability": result.trace.get("answerability")})
        logger.info("answerable %d/%d f1=%.2f abstained=%s citations=%d gold_page=%s ttft=%.0fms", len(rows),
                    len(chosen), f1s[-1], result.abstained, len(result.citations), hit,
                    result.timings.get("ttft_ms", 0.0))
    abstentions = []
    for item in held_out:
        result = engine.answer(item.question, config)
        abstentions.append(result.abstained)
        ttfts.append(result.timings.get("ttft_ms", 0.0))
        rows.append({"qid": item.qid, "question": item.question, "held_out": True, "answer": result.answer,
                     "abstained": result.abstained, "ttft_ms": result.timings.get("ttft_ms"),
                     "answerability": result.trace.get("answerability")})
        logger.info("left out %d/%d abstained=%s ttft=%.0fms", len(abstentions), len(held_out), result.abstained,
                    result.timings.get("ttft_ms", 0.0))
    return {
        "em": _avg(ems), "f1": _avg(f1s), "contains": _avg(contains),
        "false_abstention": _ratio(abstained_answerable, len(chosen)),
        "citation_precision": _ratio(precise, citations), "citations": citations,
        "highlight_rate": _ratio(highlighted, citations),
        "highlight_gold_page": _ratio(gold_page_hits, answered),
        "abstention": _ratio(sum(abstentions), len(abstentions)),
        "ttft_ms_first": round(ttfts[0], 1) if ttfts else None,
        "ttft_ms_mean": round(mean(ttfts), 1) if ttfts else None,
        "ttft_ms_p50": round(median(ttfts), 1) if ttfts else None,
        "tokens_per_s": round(mean(speeds), 2) if speeds else None, "errors": errors, "rows": rows,
    }


def _avg(values: list[float]) -> float | None:
    return round(mean(values), 4) if values else None


def _ratio(part: float, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{report['dataset']}: {report['answerable']} answerable + {report['unanswerable']} left-out questions, "
             f"{report['documents']} PDFs / {report['chunks']} chunks (ingest {report['ingest_s']} s)"]
    keys = ("em", "f1", "contains", "citation_precision", "highlight_rate", "highlight_gold_page", "abstention",
            "false_abstention", "ttft_ms_first", "ttft_ms_p50", "ttft_ms_mean", "tokens_per_s", "errors")
    for name, scores in report["backends"].items():
        lines.append(f"\n{name}")
        if "error" in scores:
            lines.append(f"  unavailable: {scores['error']}")
            continue
        lines.extend(f"  {key:<20} {scores.get(key)}" for key in keys)
    return "\n".join(lines)

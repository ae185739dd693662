"""Broad questions over real PDFs ("What problem does this paper address, and how?", "Summarise ...",
"How do A and B differ?"): answered, and answered-and-supported; and broad questions their document does not
cover, which should be answered "not found".

The questions are ``rag/evaluation/broad_questions*.json`` (written for Citewise, over
``../shared/data/pdfs``). Each is asked with its PDF selected (the document filter), as a reader asks
about "this paper", or (``--whole-library``) of the whole library with nothing selected, as a user asks about
a document by name. Supported (a gold check, not the verifier): not an abstention, at least one of the
question's key terms in the answer, and at least one citation on one of its pages (abstract,
introduction). A question with ``"absent"`` (what it asks about, which the document never names) has no
answer there and counts only toward ``abstained_on_unanswerable``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from rag.config import RagConfig
from rag.evaluation.answer_scoring import share_of
from rag.evaluation.datasets import DEFAULT_DATA_ROOT

logger = logging.getLogger(__name__)

QUESTIONS_FILE = Path(__file__).resolve().parent / "broad_questions.json"


def load_questions(path: Path = QUESTIONS_FILE) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["questions"]


def supported(answer: str, pages: list[int], key_terms: list[str], gold_pages: list[int]) -> bool:
    """At least one key term in the answer and at least one cited page among ``gold_pages``."""
    text = answer.lower()
    return any(term.lower() in text for term in key_terms) and any(p in gold_pages for p in pages)


def evaluate_broad(config: RagConfig, llm: Any, workdir: Path, *, data_root: Path = DEFAULT_DATA_ROOT,
                   router: Any = None, questions: list[dict[str, Any]] | None = None,
                   whole_library: bool = False) -> dict[str, Any]:
    """Ingest the questions' PDFs into the store in ``workdir`` and ask each question with its PDF selected.

    A PDF already stored there (a kept library, ``--library``) is not ingested again. With ``whole_library``
    no document is selected: the question is asked of everything stored in ``workdir``, as a user asks a
    library, and only citations of its own PDF count toward support.

    Raises:
        FileNotFoundError: A PDF the questions name is missing.
    """
    from dataclasses import replace

    from rag.answer.engine import CitewiseQueryEngine
    from rag.answer.llm_runner import LLMRunner
    from rag.index.store import DocumentStore
    from rag.ingest.ingestor import Ingestor
    from rag.runtime import build_router

    questions = questions if questions is not None else load_questions()
    config = replace(config, storage=replace(config.storage, data_dir=str(workdir / "data"))).validate()
    store = DocumentStore(config, router or build_router(config))
    ingestor = Ingestor(store, config)
    doc_ids: dict[str, str] = {}
    for name in dict.fromkeys(q["file"] for q in questions):
        path = data_root / "pdfs" / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found (../shared/data/pdfs)")
        result = ingestor.ingest_path(path)
        if not result.ok and not (result.status == "duplicate" and result.doc_id):
            raise RuntimeError(f"ingesting {name} failed: {result.error}")
        doc_ids[name] = result.doc_id
    engine = CitewiseQueryEngine.from_config(config, store, LLMRunner(llm))
    rows = []
    for q in questions:
        own = doc_ids[q["file"]]
        result = engine.answer(q["question"], doc_ids=None if whole_library else [own])
        pages = [p for c in result.citations if c.doc_id == own for p, rects in (c.pages or [(c.page, c.highlights)])]
        answerable = not q.get("absent")
        rows.append({"file": q["file"], "question": q["question"], "answerable": answerable,
                     "answer": result.answer, "draft": result.draft,
                     "abstained": result.abstained, "cited_pages": sorted(set(pages)),
                     "sources_pages": [s.page_start for s in result.sources if s.doc_id == own],
                     "sources_elsewhere": sum(s.doc_id != own for s in result.sources),
                     "supported": answerable and not result.abstained
                     and supported(result.answer, pages, q["key_terms"], q["pages"]),
                     "verification": result.verification, "question_kind": result.trace.get("question_kind"),
                     "ttft_ms": result.timings.get("ttft_ms"),
                     "total_ms": result.timings.get("total_ms"), "error": result.error})
        logger.info("broad %d/%d abstained=%s supported=%s", len(rows), len(questions), result.abstained,
                    rows[-1]["supported"])
    store.close()
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    return {"dataset": "broad", "scope": "whole library" if whole_library else "its document selected",
            "questions": len(answerable), "unanswerable": len(unanswerable),
            "answered": share_of(sum(not r["abstained"] for r in answerable), len(answerable)),
            "answered_and_supported": share_of(sum(r["supported"] for r in answerable), len(answerable)),
            "abstained_on_unanswerable": share_of(sum(r["abstained"] for r in unanswerable), len(unanswerable)),
            "read_as_broad": share_of(sum(bool((r["question_kind"] or {}).get("broad")) for r in answerable),
                                      len(answerable)),
            "rows": rows}


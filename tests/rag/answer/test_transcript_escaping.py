"""The Markdown export of a chat with a hostile document: no live image, link or HTML from the answer,
the passages, the file names, the question or an error, yet every one of them readable as written."""

from __future__ import annotations

import json

from rag.answer.transcript import to_json, to_markdown
from rag.answer.types import AnswerResult, Citation, Source
from tests import hostile
from tests.markdown_check import live_markup, shown_text

PASSAGE = " ".join(hostile.PDF_LINES)


def _history() -> list[dict]:
    source = Source(n=1, chunk_id="c1", doc_id="d1", file_name=hostile.HOSTILE_NAME, page_start=1, page_end=1,
                    text=PASSAGE, score=0.9)
    other = Source(n=2, chunk_id="c2", doc_id="d2", file_name=f"www.example.org {hostile.IMG_TAG}.pdf",
                   page_start=1, page_end=2, text="Other.")
    citation = Citation(n=1, doc_id="d1", file_name=hostile.HOSTILE_NAME, page=1, text=PASSAGE,
                        highlights=[[72.0, 60.0, 300.0, 80.0]], chunk_id="c1", sentence="The notes say so.")
    result = AnswerResult(
        question=hostile.QUESTION, answer=hostile.ANSWER, abstained=False, citations=[citation],
        sources=[source, other],
        groundedness=[{"sentence": f"See {hostile.LINK}.", "citations": [1], "supported": False,
                       "reason": f"{hostile.IMG_TAG} little overlap"}],
        standalone_question=f"What does {hostile.SECRET_IMAGE} say?")
    return [{"role": "user", "content": f"Summarise {hostile.SECRET_IMAGE} please"},
            {"role": "assistant", "content": hostile.ANSWER, "result": result},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "", "error": f"{hostile.HOSTILE_NAME}: {hostile.SCRIPT_TAG} failed"}]


def test_markdown_export_has_no_live_link_image_or_html() -> None:
    text = to_markdown(_history())
    assert live_markup(text) == []


def test_markdown_export_still_reads_as_written() -> None:
    shown = shown_text(to_markdown(_history()))
    for literal in [*hostile.ANSWER_LITERALS, PASSAGE, hostile.SHOWN_NAME, f"www.example.org {hostile.IMG_TAG}.pdf",
                    f"Summarise {hostile.SECRET_IMAGE} please", f"What does {hostile.SECRET_IMAGE} say?",
                    f"{hostile.IMG_TAG} little overlap", f"{hostile.SCRIPT_TAG} failed", "[1]", "[2]"]:
        assert literal in shown, literal


def test_json_export_keeps_the_text_as_data() -> None:
    data = json.loads(to_json(_history()))
    assert data["messages"][1]["content"] == hostile.ANSWER
    assert data["messages"][1]["result"]["citations"][0]["file_name"] == hostile.HOSTILE_NAME

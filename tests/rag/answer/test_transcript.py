"""Chat history exports: Markdown for people, JSON for machines; deterministic, text kept as data."""

from __future__ import annotations

import json

from rag.answer.types import AnswerResult, Citation, Source
from rag.answer.transcript import to_json, to_markdown


def _result() -> AnswerResult:
    source = Source(n=1, chunk_id="c1", doc_id="d1", file_name="report.pdf", page_start=2, page_end=2,
                    text="The maximum daily dose is 1200 milligrams. <script>alert(1)</script>", score=0.8)
    other = Source(n=2, chunk_id="c2", doc_id="d1", file_name="report.pdf", page_start=3, page_end=4, text="Other.")
    citation = Citation(n=1, doc_id="d1", file_name="report.pdf", page=2,
                        text="The maximum daily dose is\n1200 milligrams.", highlights=[[72.0, 100.0, 300.0, 112.5]],
                        chunk_id="c1", sentence="The dose is 1200 mg.")
    return AnswerResult(
        question="What is the dose?", answer="The dose is 1200 mg [1]. Take it daily [2].", abstained=False,
        citations=[citation], sources=[source, other],
        reflection=[{"round": 1, "strategy": "draft", "score": 6.5, "selected": False},
                    {"round": 2, "strategy": "expand", "score": 8.0, "selected": True}],
        groundedness=[{"sentence": "The dose is 1200 mg.", "citations": [1], "supported": True, "reason": ""},
                      {"sentence": "Take it daily.", "citations": [2], "supported": False,
                       "reason": "little overlap with the cited source"}],
        timings={"total_ms": 1234.5}, standalone_question="What is the daily dose of ibuprofen?")


def _history() -> list[dict]:
    return [{"role": "user", "content": "What is the dose?"},
            {"role": "assistant", "content": "The dose is 1200 mg [1]. Take it daily [2].", "result": _result()},
            {"role": "user", "content": "x" * 5000},
            {"role": "assistant", "content": "", "error": "The question is 5,000 characters long"}]


def test_markdown_lists_questions_answers_citations_flags_and_reflection() -> None:
    text = to_markdown(_history())
    assert text.startswith("# Citewise chat\n\n## You\n\nWhat is the dose?\n\n## Citewise\n\n"
                           "The dose is 1200 mg \\[1\\]. Take it daily \\[2\\].\n")  # escaped: shown, not parsed
    assert '- \\[1\\] report.pdf, p. 2: "The maximum daily dose is 1200 milligrams."' in text  # one line
    assert "**Other sources retrieved**\n\n- \\[2\\] report.pdf, pp. 3–4" in text
    assert "- Take it daily. (little overlap with the cited source)" in text
    assert "_Reflection: round 1: 6.5/10, round 2: 8/10 (kept)_" in text
    assert "_Searched for: What is the daily dose of ibuprofen?_" in text
    assert "> **Error:** The question is 5,000 characters long" in text
    assert text.endswith("\n") and to_markdown(_history()) == text


def test_json_round_trips_every_message_with_its_result() -> None:
    data = json.loads(to_json(_history(), title="My chat"))
    assert data["format"] == "citewise-chat" and data["title"] == "My chat"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "user", "assistant"]
    result = data["messages"][1]["result"]
    assert result == json.loads(json.dumps(_result().to_dict()))
    assert result["sources"][0]["text"].endswith("<script>alert(1)</script>")  # data, unchanged
    assert result["citations"][0]["highlights"] == [[72.0, 100.0, 300.0, 112.5]]
    assert data["messages"][3] == {"role": "assistant", "content": "", "error": "The question is 5,000 characters long"}
    assert "result" not in data["messages"][0]


def test_results_as_dicts_and_knowledge_base_off() -> None:
    result = _result()
    result.used_knowledge_base, result.citations, result.sources = False, [], []
    result.groundedness, result.reflection = [], []
    history = [{"role": "user", "content": "Hi"},
               {"role": "assistant", "content": "Hello.", "result": result.to_dict()}]
    text = to_markdown(history)
    assert "_Answered without searching the documents._" in text and "Citations" not in text
    assert json.loads(to_json(history))["messages"][1]["result"]["used_knowledge_base"] is False
    assert to_markdown([]) == "# Citewise chat\n"

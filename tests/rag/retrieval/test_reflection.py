"""Reflection as a postprocessor: the context is graded 1–10 before any answer is written, and weak
context is searched again wider, reworded, or both (scripted LLMs, a real store)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.retrieval.grading import parse_grade
from tests import fixtures
from tests.fakes import ScriptedLLM, make_engine

Q = "What is the maximum daily dose of ibuprofen for adults?"
GOOD = "relevance: 9\ncompleteness: 8\nspecificity: 10\nreason: the sources give the dose."
BAD = "relevance: 3\ncompleteness: 2\nspecificity: 4\nreason: the sources do not give the dose."
REWORDED = '{"variants": ["ibuprofen adult daily limit milligrams"]}'


@pytest.mark.parametrize("reply,score", [
    (GOOD, 9.0), ("Accuracy - 8/10, Completeness: 6, relevance=7, Support: 7", 7.0), ("Score: 6/10", 6.0),
    ("8", 8.0), ("I would say 7 out of 10.", 7.0), ("overall rating: 4", 4.0),
    ("", None), ("The answer looks fine to me!", None), ("accuracy: 45 support: 0", None), ("评分：很好", None),
], ids=["format", "mixed", "score", "bare", "out-of", "overall", "empty", "prose", "out-of-range", "zh-garbage"])
def test_parse_grade_never_raises(reply: str, score: float | None) -> None:
    assert parse_grade(reply).score == score


@pytest.fixture
def library(store: DocumentStore, config: RagConfig, tmp_path: Path) -> RagConfig:
    small = replace(config, chunking=replace(config.chunking, chunk_size=40, chunk_overlap=5))
    assert Ingestor(store, small).ingest_path(fixtures.make_english_pdf(tmp_path, pages=6)).chunks >= 8
    # the scripted replies here are grades, rewrites and answers; the answerability gate has its own tests
    return replace(config, generation=replace(config.generation, answer_check=False),
                   retrieval=replace(config.retrieval, top_k=2))


def _ask(store: DocumentStore, config: RagConfig, replies: list[str], **reflection):
    config = replace(config, reflection=replace(config.reflection, enabled=True, **reflection))
    llm = ScriptedLLM(replies=replies)
    result = make_engine(store, config, llm).answer(Q)
    return result, llm


def test_good_context_is_graded_once_before_the_answer(store, library) -> None:
    result, llm = _ask(store, library, [GOOD, "It is 1200 milligrams [1]."])

    (only,) = result.reflection
    assert only["score"] == 9.0 and only["selected"] and only["expansion"] == 0
    assert result.answer == "It is 1200 milligrams [1]."
    grading = llm.prompts[0]  # graded first, answered second
    assert Q in grading and "<<<SOURCE 1>>>" in grading and "relevance: <1-10>" in grading
    stages = [s["name"] for s in result.trace["retrieval"]["stages"]]
    assert stages[-2:] == ["reflection", "final"]


def test_expand_searches_wider_and_the_answer_gets_the_wider_context(store, library) -> None:
    result, _ = _ask(store, library, [BAD, GOOD, "It is 1200 milligrams [1]."], strategy="expand")

    assert [r["score"] for r in result.reflection] == [3.0, 9.0]
    assert [r["expansion"] for r in result.reflection] == [0, 1]
    assert result.reflection[1]["selected"] and "do not give the dose" in result.reflection[0]["reason"]
    assert len(result.reflection[1]["passages"]) > len(result.reflection[0]["passages"])
    final = next(s for s in result.trace["retrieval"]["stages"] if s["name"] == "final")
    assert "of the top 4 fit" in final["notes"][0]  # top_k 2, widened once: (1 + 1) * 2


def test_rewrite_searches_with_the_query_rewriter(store, library) -> None:
    result, llm = _ask(store, library, [BAD, REWORDED, GOOD, "It is 1200 milligrams [1]."], strategy="rewrite")

    second = result.reflection[1]
    assert second["query"] == "ibuprofen adult daily limit milligrams" and second["expansion"] == 0
    assert second["selected"] and "JSON" in llm.prompts[1]  # the one query rewriter's prompt


def test_both_strategies_keep_the_best_graded_round(store, library) -> None:
    two = '{"variants": ["ibuprofen adult daily limit", "ibuprofen maximum per day"]}'
    replies = ["relevance: 6 completeness: 6 specificity: 6", two, "score: 4", "score: 5", "First round's context [1]."]
    result, llm = _ask(store, library, replies, strategy="both", max_rounds=3)

    assert [r["score"] for r in result.reflection] == [6.0, 4.0, 5.0]
    assert [r["expansion"] for r in result.reflection] == [0, 1, 2]
    assert [r["query"] for r in result.reflection] == [Q, "ibuprofen adult daily limit", "ibuprofen maximum per day"]
    assert len(llm.prompts) == 5  # the rewordings come from one rewriter call
    assert result.reflection[0]["selected"]
    final = next(s for s in result.trace["retrieval"]["stages"] if s["name"] == "final")
    assert "of the top 2 fit" in final["notes"][0]  # the kept round was not widened


def test_an_unparseable_grade_is_an_unscored_round_not_a_crash(store, library) -> None:
    result, _ = _ask(store, library, ["<<garbage>> ??? lorem", "1200 milligrams [1]."])

    (only,) = result.reflection
    assert only["unscored"] and only["score"] is None and result.answer == "1200 milligrams [1]."


def test_an_unscored_retry_is_recorded_and_the_loop_goes_on(store, library) -> None:
    result, _ = _ask(store, library, [BAD, "no idea", GOOD, "Third [1]."], strategy="expand", max_rounds=3)

    assert [r["unscored"] for r in result.reflection] == [False, True, False]
    assert result.reflection[2]["selected"] and result.answer == "Third [1]."


def test_a_reworded_search_that_finds_nothing_keeps_the_passages_it_had(store, library) -> None:
    nothing = '{"variants": ["zzqx vvkw"]}'
    config = replace(library, retrieval=replace(library.retrieval, sources="keyword"))
    result, _ = _ask(store, config, [BAD, nothing, "1200 milligrams [1]."], strategy="rewrite", max_rounds=2)

    assert [r["score"] for r in result.reflection] == [3.0, None]
    assert result.reflection[0]["selected"] and result.sources  # never left with nothing to answer from


def test_without_an_llm_reflection_says_so_and_passes_the_passages_on(store, library) -> None:
    config = replace(library, reflection=replace(library.reflection, enabled=True))
    result = make_engine(store, config).search(Q)

    stage = result.trace.get("reflection")
    assert stage is not None and "no LLM" in stage.fallback_reason and result.nodes

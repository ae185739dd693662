"""Reflection: robust grade parsing, retry strategies, best answer kept (scripted LLMs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.answer.engine import AnswerEngine
from rag.ingest.ingestor import Ingestor
from rag.retrieval.pipeline import RetrievalPipeline
from rag.retrieval.reflection import expanded_config, parse_grade
from rag.index.store import DocumentStore
from tests import fixtures
from tests.fakes import ScriptedLLM

Q = "What is the maximum daily dose of ibuprofen for adults?"
GOOD = "accuracy: 9\ncompleteness: 8\nrelevance: 9\nsupport: 10\nreason: cites the dose."
BAD = "accuracy: 3\ncompleteness: 2\nrelevance: 5\nsupport: 2\nreason: does not give the dose."


@pytest.mark.parametrize("reply,score", [
    (GOOD, 9.0), ("Accuracy - 8/10, Completeness: 6, relevance=7, Support: 7", 7.0), ("Score: 6/10", 6.0),
    ("8", 8.0), ("I would say 7 out of 10.", 7.0), ("overall rating: 4", 4.0),
    ("", None), ("The answer looks fine to me!", None), ("accuracy: 45 support: 0", None), ("评分：很好", None),
], ids=["format", "mixed", "score", "bare", "out-of", "overall", "empty", "prose", "out-of-range", "zh-garbage"])
def test_parse_grade_never_raises(reply: str, score: float | None) -> None:
    grade = parse_grade(reply)
    assert grade.score == score


def test_expanded_config_grows_top_k_candidates_and_budget(config: RagConfig) -> None:
    bigger = expanded_config(config, 1)
    assert bigger.retrieval.top_k == 2 * config.retrieval.top_k
    assert bigger.retrieval.candidate_k == 2 * config.retrieval.candidate_k
    assert bigger.generation.max_context_tokens > config.generation.max_context_tokens


@pytest.fixture
def reflective(store: DocumentStore, config: RagConfig, tmp_path: Path) -> RagConfig:
    assert Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    # the scripted replies here are answers and grades; the answerability check has its own tests
    return replace(config, generation=replace(config.generation, answer_check=False))


def _run(store: DocumentStore, config: RagConfig, replies: list[str], **reflection):
    config = replace(config, reflection=replace(config.reflection, enabled=True, **reflection))
    llm = ScriptedLLM(replies=replies)
    stream = AnswerEngine(RetrievalPipeline(store), store, llm).stream(Q, config)
    draft = "".join(stream)
    return draft, stream.result(), llm


def test_good_draft_is_scored_once_and_kept(store, reflective) -> None:
    draft, result, _ = _run(store, reflective, ["1200 milligrams [1].", GOOD])
    assert [r["score"] for r in result.reflection] == [9.0] and result.answer == draft
    assert result.reflection[0]["strategy"] == "draft" and result.reflection[0]["selected"]


def test_expand_retries_with_larger_top_k_and_keeps_the_better_answer(store, reflective) -> None:
    _, result, llm = _run(store, reflective, ["I am not sure.", BAD, "It is 1200 milligrams [1].", GOOD],
                          strategy="expand")
    assert [r["score"] for r in result.reflection] == [3.0, 9.0]
    assert result.reflection[1]["strategy"] == "expand"
    assert result.reflection[1]["top_k"] > result.reflection[0]["top_k"]
    assert result.answer == "It is 1200 milligrams [1]." and result.reflection[1]["selected"]
    assert "does not give the dose" in result.reflection[0]["reason"]
    assert result.citations and result.citations[0].page == 2


def test_rewrite_retries_with_a_reformulated_query(store, reflective) -> None:
    _, result, llm = _run(store, reflective, ["I am not sure.", BAD, "ibuprofen adult daily limit milligrams",
                                              "It is 1200 milligrams [1].", GOOD], strategy="rewrite")
    second = result.reflection[1]
    assert second["strategy"] == "rewrite" and second["query"] == "ibuprofen adult daily limit milligrams"
    assert second["top_k"] == result.reflection[0]["top_k"]
    assert result.answer == "It is 1200 milligrams [1]."


def test_both_strategies_and_best_of_all_rounds(store, reflective) -> None:
    replies = ["First draft [1].", "accuracy: 6 completeness: 6 relevance: 6 support: 6",
               "ibuprofen adult dose limit", "Second try [1].", "score: 4",
               "another query", "Third try [1].", "score: 5"]
    draft, result, _ = _run(store, reflective, replies, strategy="both", max_rounds=3)
    assert [r["score"] for r in result.reflection] == [6.0, 4.0, 5.0]
    assert [r["strategy"] for r in result.reflection] == ["draft", "both", "both"]
    assert result.answer == draft == "First draft [1]."


def test_garbage_grade_is_an_unscored_round_not_a_crash(store, reflective) -> None:
    draft, result, _ = _run(store, reflective, ["1200 milligrams [1].", "<<garbage>> ??? lorem"])
    (only,) = result.reflection
    assert only["unscored"] and only["score"] is None and result.answer == draft


def test_unscored_retry_round_is_recorded_and_loop_continues(store, reflective) -> None:
    replies = ["Draft [1].", BAD, "Retry [1].", "no idea", "Third [1].", GOOD]
    _, result, _ = _run(store, reflective, replies, strategy="expand", max_rounds=3)
    assert [r["unscored"] for r in result.reflection] == [False, True, False]
    assert result.answer == "Third [1]."

"""Cited sentences checked against the chunks they cite."""

from __future__ import annotations

from rag.answer.types import Source
from rag.answer.citations import cited_sentences
from rag.answer.groundedness import check_groundedness
from tests.fakes import HashEmbedding, ScriptedLLM

SOURCES = [Source(1, "d:1", "d", "f.pdf", 2, 2, "The maximum daily dose of ibuprofen for adults is 1200 milligrams."),
           Source(2, "d:2", "d", "f.pdf", 3, 3, "Patients reported that headache pain decreased within two hours.")]


def test_supported_unsupported_and_wrong_number_are_flagged() -> None:
    answer = ("Adults may take at most 1200 milligrams of ibuprofen daily [1]. "
              "The study was funded by a bank in Zurich [2]. The maximum daily dose is 1500 milligrams [1]. "
              "Uncited sentence.")
    records = check_groundedness(cited_sentences(answer, 2), SOURCES, embedder=HashEmbedding())
    assert [r["supported"] for r in records] == [True, False, False]
    assert records[0]["semantic"] is not None and records[0]["lexical"] >= 0.5
    assert "1500" in records[2]["reason"] and records[1]["reason"]


def test_llm_check_decides_when_enabled_and_garbage_is_ignored() -> None:
    sentences = cited_sentences("Headache pain went down within two hours [2].", 2)
    assert check_groundedness(sentences, SOURCES, llm=ScriptedLLM(replies=["no"]))[0]["supported"] is False
    record = check_groundedness(sentences, SOURCES, llm=ScriptedLLM(replies=["¯\\_(ツ)_/¯"]))[0]
    assert record["llm"] is None and record["supported"] is True


def test_chinese_sentence_checked_by_characters() -> None:
    sources = [Source(1, "z:1", "z", "z.pdf", 2, 2, "布洛芬每日最大剂量为1200毫克。")]
    (record,) = check_groundedness(cited_sentences("布洛芬的每日最大剂量是1200毫克[1]。", 1), sources)
    assert record["supported"] is True


def test_an_answer_in_traditional_script_is_compared_with_a_simplified_source_as_its_simplified_twin() -> None:
    sources = [Source(1, "z:1", "z", "z.pdf", 2, 2, "应付职工薪酬的期末余额为1,234元。")]
    (twin,) = check_groundedness(cited_sentences("应付职工薪酬期末余额为1,234元[1]。", 1), sources,
                                 embedder=HashEmbedding())
    (traditional,) = check_groundedness(cited_sentences("應付職工薪酬期末餘額為1,234元[1]。", 1), sources,
                                        embedder=HashEmbedding())
    assert twin["semantic"] is not None and traditional["semantic"] == twin["semantic"]
    assert traditional["supported"] is True

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

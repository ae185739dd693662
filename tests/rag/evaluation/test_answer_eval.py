"""Answer evaluation: SQuAD/CMRC metrics, paragraph PDFs, and a tiny end-to-end run with fakes."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from rag.evaluation.answer_library import write_paragraph_pdf
from rag.evaluation.answer_metrics import contains_answer, exact_match, f1_score
from rag.evaluation.answers import evaluate_answers, format_report
from rag.config import RagConfig
from tests.fakes import ScriptedLLM


def test_squad_normalisation_and_f1() -> None:
    assert exact_match("The Denver Broncos!", ["Denver Broncos"], chinese=False) == 1.0
    assert f1_score("Denver Broncos won", ["Denver Broncos"], chinese=False) == pytest.approx(0.8)
    assert f1_score("nothing", ["Denver Broncos"], chinese=False) == 0.0


def test_cmrc_character_f1_and_contains() -> None:
    assert exact_match("北京。", ["北京"], chinese=True) == 1.0
    assert f1_score("在北京市", ["北京"], chinese=True) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert contains_answer("答案是1200毫克[1]。", ["1200毫克"], chinese=True)


def test_paragraph_pdf_has_one_paragraph_per_page(tmp_path: Path) -> None:
    english = "Alpha " * 300
    chinese = "布洛芬每日最大剂量为1200毫克。" * 40
    write_paragraph_pdf(tmp_path / "p.pdf", [english, chinese, "Short one."])
    with pymupdf.open(tmp_path / "p.pdf") as doc:
        assert doc.page_count == 3
        assert doc[0].get_text().count("Alpha") == 300
        assert "1200" in doc[1].get_text() and "布洛芬" in doc[1].get_text()
        assert doc[2].get_text().strip() == "Short one."


def _dataset(path: Path) -> Path:
    paragraphs = [
        ("The Larkspur Library opens at nine and lends books for 21 days.", "How many days is the loan period?", "21 days"),
        ("The Orion Bridge opened in 1998 and is 1,240 metres long.", "When did the Orion Bridge open?", "1998"),
        ("Helena Voss designed the east wing of the maritime museum.", "Who designed the east wing?", "Helena Voss"),
        ("The river festival takes place every July on the north bank.", "When is the river festival?", "every July"),
    ]
    data = {"data": [{"title": "Town", "paragraphs": [
        {"context": c, "qas": [{"id": f"q{i}", "question": q, "answers": [{"text": a, "answer_start": 0}]}]}
        for i, (c, q, a) in enumerate(paragraphs)]}]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_end_to_end_with_fakes(config: RagConfig, fake_router, tmp_path: Path) -> None:
    llm = ScriptedLLM(replies=["The answer was not found in your documents."])
    report = evaluate_answers(_dataset(tmp_path / "set.json"), config, n=2, unanswerable=1, distractors=1, seed=0,
                              workdir=tmp_path / "work", router=fake_router, llm_factory=lambda: llm)
    scores = report["backends"]["given"]
    assert report["answerable"] == 2 and report["unanswerable"] == 1 and report["documents"] == 3
    assert scores["abstention"] == 1.0 and scores["false_abstention"] == 1.0 and scores["f1"] == 0.0
    assert "abstention" in format_report(report)

"""Broad questions: the written set is well formed, and a run scores answered-and-supported by gold."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.evaluation.broad_eval import evaluate_broad, load_questions, supported
from rag.retrieval.question_kind import is_broad
from tests import fixtures
from tests.app.conftest import RoutedLLM


def test_every_written_question_is_broad_and_names_a_shared_pdf() -> None:
    questions = load_questions()
    assert len(questions) >= 10
    for q in questions:
        assert is_broad(q["question"]), q["question"]
        assert q["file"].startswith(("en/", "zh/")) and q["key_terms"] and q["pages"]


def test_every_question_of_the_fully_read_development_sets_stays_broad() -> None:
    # the sets every round so far was chosen on, each a development set after its report; broad-named2 and
    # broad-named3 still hold misses (docs/answering.md, the tenth and eleventh rounds) and are left out, as is
    # broad-named4 (written blind for the twelfth)
    from rag.evaluation.answers import BROAD_SETS

    lost = [q["question"] for name, path in BROAD_SETS.items() if name not in ("broad-named2", "broad-named3", "broad-named4")
            for q in load_questions(path) if not is_broad(q["question"])]
    assert not lost


def test_supported_needs_a_key_term_and_a_cited_gold_page() -> None:
    assert supported("It builds a corpus of papers [1].", [1], ["corpus"], [1, 2])
    assert not supported("It builds a corpus of papers [1].", [7], ["corpus"], [1, 2])
    assert not supported("It is about music [1].", [1], ["corpus"], [1, 2])


SUMMARY = {"file": "en/report.pdf", "question": "What is this report about? Summarise it.",
           "key_terms": ["clinical study"], "pages": [1]}


def _run(config: RagConfig, router, tmp_path: Path, questions: list[dict]) -> dict:
    """The broad run over the fixture report, kept in ``tmp_path / "w"``, its model replying with a summary."""
    (tmp_path / "pdfs" / "en").mkdir(parents=True, exist_ok=True)
    if not (tmp_path / "pdfs" / "en" / "report.pdf").exists():
        fixtures.make_english_pdf(tmp_path / "pdfs" / "en")
    llm = RoutedLLM(replies=["This report describes a small clinical study [1]."])
    return evaluate_broad(config, llm, tmp_path / "w", data_root=tmp_path, router=router, questions=questions)


def test_a_summary_question_gets_the_documents_opening_and_is_scored(config: RagConfig, fake_router,
                                                                    tmp_path: Path) -> None:
    report = _run(config, fake_router, tmp_path, [SUMMARY])
    (row,) = report["rows"]
    assert 1 in row["sources_pages"]  # the opening passage was added for the broad question
    assert row["supported"] and report["answered_and_supported"] == 1.0
    assert row["question_kind"] == {"broad": True, "read_by": "wording"} and report["read_as_broad"] == 1.0
    factoid = _run(config, fake_router, tmp_path, [{**SUMMARY, "question": "Which study does this report describe?"}])
    assert factoid["rows"][0]["question_kind"]["broad"] is False and factoid["read_as_broad"] == 0.0


def test_asked_of_the_whole_library_only_citations_of_its_own_pdf_count(config: RagConfig, fake_router,
                                                                        tmp_path: Path) -> None:
    (tmp_path / "pdfs" / "zh").mkdir(parents=True)
    fixtures.make_chinese_pdf(tmp_path / "pdfs" / "zh")
    _run(config, fake_router, tmp_path, [SUMMARY])  # the English report, in the same library
    # an English question about the report, filed under the Chinese PDF: its answer cites the report's page 1
    elsewhere = {**SUMMARY, "file": "zh/chinese.pdf"}
    report = evaluate_broad(config, RoutedLLM(replies=["This report describes a small clinical study [1]."]),
                            tmp_path / "w", data_root=tmp_path, router=fake_router, questions=[SUMMARY, elsewhere],
                            whole_library=True)
    by_file = {r["file"]: r for r in report["rows"]}
    assert report["scope"] == "whole library"
    assert by_file["en/report.pdf"]["supported"]
    assert not by_file["zh/chinese.pdf"]["supported"] and by_file["zh/chinese.pdf"]["sources_elsewhere"] > 0


def test_the_blind_holdout_set_is_well_formed_and_named_on_the_command_line() -> None:
    from rag.evaluation.answers import BROAD_SETS

    questions = load_questions(BROAD_SETS["broad-holdout"])
    assert len(questions) == 16 and BROAD_SETS["broad"].is_file()
    chinese = [q for q in questions if q["file"].startswith("zh/")]
    assert len(chinese) == 8 and all(q["file"].startswith(("en/", "zh/")) for q in questions)
    for q in questions:
        assert q["key_terms"] and q["pages"] and all(isinstance(page, int) and page >= 1 for page in q["pages"])


@pytest.mark.parametrize("name", ["broad-holdout2", "broad-holdout3", "broad-holdout4", "broad-holdout5",
                                  "broad-holdout6"])
def test_the_later_blind_sets_are_well_formed(name: str) -> None:
    from rag.evaluation.answers import BROAD_SETS

    questions = load_questions(BROAD_SETS[name])
    assert len(questions) == 16 and sum(q["file"].startswith("zh/") for q in questions) == 8
    for q in questions:
        assert q["key_terms"] and all(isinstance(term, str) and term for term in q["key_terms"])
        assert q["pages"] and all(isinstance(page, int) and page >= 1 for page in q["pages"])


@pytest.mark.parametrize(("name", "size", "chinese"), [
    ("broad-unanswerable-dev", 8, 4), ("broad-unanswerable-report", 8, 4), ("broad-unanswerable-holdout", 12, 6),
    ("broad-unanswerable-holdout2", 6, 6), ("broad-unanswerable-holdout3", 8, 8), ("broad-unanswerable-holdout4", 6, 0),
    ("broad-unanswerable-holdout5", 8, 0), ("broad-unanswerable-holdout6", 6, 6)])
def test_the_sets_of_questions_their_documents_do_not_cover_are_well_formed(name: str, size: int,
                                                                            chinese: int) -> None:
    from rag.evaluation.answers import BROAD_SETS

    questions = load_questions(BROAD_SETS[name])
    assert len(questions) == size and sum(q["file"].startswith("zh/") for q in questions) == chinese
    for q in questions:
        assert q["absent"] and all(isinstance(term, str) and term for term in q["absent"])
        assert "key_terms" not in q and "pages" not in q


def test_a_question_its_document_does_not_cover_counts_only_toward_abstention(config: RagConfig, fake_router,
                                                                              tmp_path: Path) -> None:
    questions = [SUMMARY, {"file": "en/report.pdf", "question": "Summarise the report's cost-effectiveness analysis.",
                           "absent": ["cost-effectiveness"]}]
    report = _run(config, fake_router, tmp_path, questions)
    assert report["questions"] == 1 and report["unanswerable"] == 1
    assert report["answered_and_supported"] == 1.0  # the unanswerable question's row does not dilute it
    unanswerable = report["rows"][1]
    # no source names a cost-effectiveness analysis: the broad check refuses it before the model is asked
    assert not unanswerable["answerable"] and not unanswerable["supported"] and unanswerable["abstained"]
    assert report["abstained_on_unanswerable"] == 1.0
    # a kept library is asked again without ingesting the PDF a second time
    again = _run(config, fake_router, tmp_path, questions)
    assert [r["sources_pages"] for r in again["rows"]] == [r["sources_pages"] for r in report["rows"]]


@pytest.mark.parametrize(("name", "size", "language"), [("broad-holdout7", 8, "zh/"), ("broad-holdout8", 12, "zh/"),
                                                       ("broad-holdout9", 8, "en/"), ("broad-holdout10", 8, "en/"),
                                                       ("broad-holdout11", 8, "zh/")])
def test_the_one_language_blind_sets_are_well_formed(name: str, size: int, language: str) -> None:
    from rag.evaluation.answers import BROAD_SETS

    questions = load_questions(BROAD_SETS[name])
    assert len(questions) == size and all(q["file"].startswith(language) for q in questions)
    for q in questions:
        assert q["key_terms"] and all(isinstance(term, str) and term for term in q["key_terms"])
        assert q["pages"] and all(isinstance(page, int) and page >= 1 for page in q["pages"])


@pytest.mark.parametrize("name", ["broad-named", "broad-named2", "broad-named3", "broad-named4"])
def test_the_named_document_sets_name_each_document_in_their_questions(name: str) -> None:
    from rag.evaluation.answers import BROAD_SETS

    questions = load_questions(BROAD_SETS[name])
    assert len(questions) == 24 and len({q["file"] for q in questions}) == 12
    for q in questions:
        assert q["names_document_by"] and q["names_document_by"] in q["question"]
        assert Path(q["file"]).stem not in q["question"]  # named as a reader names it, not by its file
        assert q["key_terms"] and q["pages"] and all(isinstance(page, int) and page >= 1 for page in q["pages"])

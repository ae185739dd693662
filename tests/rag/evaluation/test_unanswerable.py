"""Real unanswerable sets: loaders, the tune/report split, the library, and gold-based scoring."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rag.answer.types import AnswerResult, Citation, Source
from rag.config import RagConfig
from rag.evaluation.answer_library import QAItem, build_library, build_set_library
from rag.evaluation.answer_scoring import ask, summarise
from rag.evaluation.answers import evaluate_answers
from rag.evaluation.unanswerable import load_set
from tests.fakes import ScriptedLLM


def _squad2(root: Path) -> None:
    def article(title: str, context: str, answerable: str, impossible: str) -> dict:
        return {"title": title, "paragraphs": [{"context": context, "qas": [
            {"id": f"{title}-a", "question": answerable, "is_impossible": False,
             "answers": [{"text": "1998", "answer_start": 0}]},
            {"id": f"{title}-u", "question": impossible, "is_impossible": True, "answers": [],
             "plausible_answers": [{"text": "1998", "answer_start": 0}]}]}]}

    data = {"data": [article("Other", "The Orion Bridge opened in 1998.", "When did it open?", "When did it close?"),
                     article("The_Legend_of_Zelda:_Twilight_Princess", "Twilight Princess came out in 1998.",
                             "When did Twilight Princess come out?", "When did Australia Twilight come out?"),
                     article("Spectre_(2015_film)", "Spectre premiered in 1998 in London.", "When did Spectre premiere?",
                             "When did Skyfall premiere?")]}
    folder = root / "squad2-train-first10"
    folder.mkdir(parents=True)
    (folder / "train-v2.0_first10articles.json").write_text(json.dumps(data), encoding="utf-8")


def _cjrc(root: Path) -> None:
    def case(i: int) -> dict:
        return {"caseid": str(i), "domain": "civil", "paragraphs": [{"context": f"原告于2019年借款{i}万元。", "casename": "x",
                "qas": [{"id": f"{i}_1", "question": "借款多少？", "is_impossible": "false",
                         "answers": [{"text": f"{i}万元", "answer_start": 9}] * 3},
                        {"id": f"{i}_2", "question": "是否归还？", "is_impossible": "false",
                         "answers": [{"text": "YES", "answer_start": -1}] * 3},
                        {"id": f"{i}_3", "question": "利率多少？", "is_impossible": "true",
                         "answers": [{"text": "", "answer_start": -1}] * 3},
                        {"id": f"{i}_4", "question": "何时起诉？", "is_impossible": "true",
                         "answers": [{"text": "2020年", "answer_start": 1}] * 3}]}]}

    folder = root / "cail2019-cjrc-dev"
    folder.mkdir(parents=True)
    (folder / "dev_ground_truth.json").write_text(json.dumps({"data": [case(i) for i in range(4)]}, ensure_ascii=False),
                                                 encoding="utf-8")


def test_squad2_is_split_by_article_and_impossible_questions_keep_their_paragraph(tmp_path: Path) -> None:
    _squad2(tmp_path)
    tune, report = load_set("squad2", "tune", tmp_path), load_set("squad2", "report", tmp_path)
    assert {i.question for i in tune.items} == {"When did Twilight Princess come out?",
                                                "When did Australia Twilight come out?"}
    assert [i.impossible for i in tune.items] == [False, True]
    assert tune.core == ["1-0"] and report.core == ["2-0"]
    assert tune.distractors == ["0-0"]  # never the other split's article
    with pytest.raises(ValueError, match="split"):
        load_set("squad2", "test", tmp_path)


def test_cjrc_keeps_clean_labels_and_drops_yes_no_answers(tmp_path: Path) -> None:
    _cjrc(tmp_path)
    tune = load_set("cjrc", "tune", tmp_path)
    assert {i.article for i in tune.items} == {0, 2}  # even cases tune, odd report
    assert sorted(i.qid for i in tune.items) == ["0_1", "0_3", "2_1", "2_3"]  # no YES/NO, no noisy 'impossible'
    assert [i.impossible for i in tune.items if i.qid.endswith("_3")] == [True, True]


def test_missing_data_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="cail2019"):
        load_set("cjrc", "tune", tmp_path)


def test_the_set_library_indexes_the_unanswerable_questions_paragraphs(config: RagConfig, fake_router,
                                                                       tmp_path: Path) -> None:
    _squad2(tmp_path)
    qa_set = load_set("squad2", "report", tmp_path)
    library = build_set_library(qa_set, config, n=1, unanswerable=1, seed=0, workdir=tmp_path / "w",
                                distractors=1, router=fake_router)
    assert [i.qid for i in library.held_out] == ["Spectre_(2015_film)-u"]
    assert "2-0" in library.gold_locations and "0-0" in library.gold_locations
    library.store.close()


def test_left_out_questions_whose_answer_is_stated_elsewhere_are_dropped(config: RagConfig, fake_router,
                                                                         tmp_path: Path) -> None:
    paragraphs = ["The Orion Bridge opened in 1998.", "The tunnel opened in 1998 too.", "Helena Voss drew the wing."]
    questions = ["When did the bridge open?", "When did the tunnel open?", "Who drew the wing?"]
    answers = ["1998", "1998", "Helena Voss"]
    data = {"data": [{"title": "T", "paragraphs": [
        {"context": c, "qas": [{"id": f"q{i}", "question": q, "answers": [{"text": a, "answer_start": 0}]}]}
        for i, (c, q, a) in enumerate(zip(paragraphs, questions, answers))]}]}
    path = tmp_path / "set.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    for seed in range(6):  # whichever question is left out, one whose "1998" is on another page is dropped
        library = build_library(path, config, n=2, unanswerable=1, distractors=1, seed=seed,
                                workdir=tmp_path / f"w{seed}", router=fake_router)
        for item in library.held_out:
            assert item.answers == ["Helena Voss"]
        library.store.close()


def _result(answer: str, *, abstained: bool = False, citations: list[Citation] | None = None) -> AnswerResult:
    return AnswerResult(question="q", answer=answer, abstained=abstained, citations=citations or [], sources=[],
                        timings={"ttft_ms": 100.0, "total_ms": 300.0})


def test_scoring_is_against_gold_not_the_verifier() -> None:
    chunk = SimpleNamespace(text="The Orion Bridge opened in 1998.")
    store = SimpleNamespace(keywords=SimpleNamespace(get=lambda ids: {i: chunk for i in ids}))
    citation = Citation(n=1, doc_id="d", file_name="f", page=2, text="The Orion Bridge opened in 1998.",
                        highlights=[[0, 0, 1, 1]], chunk_id="c1", pages=[(2, [[0, 0, 1, 1]])])
    item = QAItem("q1", "When did it open?", ["1998"], "p1", 0)
    engine = SimpleNamespace(answer=lambda q: _result("It opened in 1998 [1].", citations=[citation]))
    right = ask(engine, item, False, {"p1": {("d", 2)}}, store)
    assert right["right"] and not right["unsupported"] and right["highlight_gold_span"]
    wrong_page = ask(engine, item, False, {"p1": {("d", 3)}}, store)
    assert wrong_page["right"] and not wrong_page["highlight_gold_span"]
    shown_on_impossible = ask(engine, item, True, {}, store)
    assert shown_on_impossible["unsupported"]  # any shown answer to an unanswerable question
    refused = ask(SimpleNamespace(answer=lambda q: _result("not found", abstained=True)), item, True, {}, store)
    figures = summarise([right, shown_on_impossible, refused])
    assert figures["abstention"] == 0.5 and figures["false_abstention"] == 0.0
    assert figures["answered_and_right"] == 1.0 and figures["unsupported_rate"] == 0.5
    assert figures["ttft_ms_p50"] == 100.0 and figures["highlight_gold_span"] == 1.0


def test_rows_say_whether_the_evidence_and_the_draft_held_the_answer() -> None:
    store = SimpleNamespace(keywords=SimpleNamespace(get=lambda ids: {}))
    item = QAItem("q1", "When did it open?", ["1998"], "p1", 0)

    def refused(evidence: str, draft: str = "", by: dict | None = None) -> dict:
        result = _result("The answer was not found in your documents.", abstained=True)
        result.sources = [Source(1, "c1", "d", "f", 1, 1, evidence)]
        result.draft, result.trace = draft, {"answerability": by} if by else {}
        return ask(SimpleNamespace(answer=lambda q: result), item, False, {}, store)

    model = refused("The Orion Bridge opened in 1998 after long delays.")
    assert model["refused_by"] == "model" and model["gold_in_evidence"] and not model["gold_in_draft"]
    missing = refused("The Orion Bridge is long.")
    assert not missing["gold_in_evidence"]
    verifier = refused("It opened in 1998.", draft="It opened in 1998 [1].")
    assert verifier["gold_in_draft"]
    gate = refused("It opened in 1998.", by={"answerable": False})
    assert gate["refused_by"] == "gate"
    figures = summarise([model, missing, verifier, gate])
    assert figures["false_abstention"] == 1.0 and figures["false_abstention_gold_in_evidence"] == 3
    assert figures["gold_in_evidence"] == 0.75
    assert "gold_in_evidence" not in ask(SimpleNamespace(answer=lambda q: _result("x")), item, True, {}, store)


def test_end_to_end_on_a_real_unanswerable_set_with_fakes(config: RagConfig, fake_router, tmp_path: Path) -> None:
    _squad2(tmp_path)
    qa_set = load_set("squad2", "tune", tmp_path)
    llm = ScriptedLLM(replies=["The answer was not found in your documents."])
    report = evaluate_answers(None, config, n=1, unanswerable=1, distractors=1, seed=0, workdir=tmp_path / "w",
                              router=fake_router, llm_factory=lambda: llm, qa_set=qa_set)
    scores = report["backends"]["given"]
    assert report["mode"] == "paragraph in the library" and report["split"] == "tune"
    assert scores["abstention"] == 1.0 and scores["false_abstention"] == 1.0 and len(scores["rows"]) == 2

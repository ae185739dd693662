"""The Evaluation page in AppTest with tiny question sets: a bundled-style SQuAD file, CSV uploads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import rag.evaluation.run
from tests import fixtures
from tests.fixtures import TINY_SQUAD as SQUAD
from tests.app.conftest import open_app
from ui.eval_view import RESULTS_KEY, latency_frame, recall_frame

CSV = ("question,expected_document,expected_page\n"
       "What is the maximum daily dose of ibuprofen for adults?,report.pdf,2\n"
       "How quickly did headache pain decrease?,report.pdf,3\n"
       "What does the appendix list?,missing.pdf,1\n")


@pytest.fixture
def eval_data(tmp_path: Path) -> Path:
    folder = tmp_path / "shared-data"
    folder.mkdir()
    return folder


@pytest.fixture
def app(app_data: Path, tmp_path: Path, eval_data: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("RAG_EVAL_DATA", str(eval_data))
    monkeypatch.setattr(rag.evaluation.run, "EVAL_HOME", tmp_path / "home")
    return open_app("pages/evaluation.py", timeout_s=120)


def _widget(app: AppTest, kind: str, label: str):
    matches = [w for w in getattr(app, kind) if w.label == label]
    assert len(matches) == 1, f"{kind} {label!r}: found {len(matches)}"
    return matches[0]


def _run(app: AppTest) -> AppTest:
    _widget(app, "button", "Run evaluation").click().run()
    assert not app.exception, app.exception
    return app


def _charts(app: AppTest) -> list:
    return [e for e in app.get("vega_lite_chart")]


def test_bundled_set_runs_current_settings_next_to_a_preset(app: AppTest, eval_data: Path, tmp_path: Path) -> None:
    (eval_data / "squad-v1.1-dev.json").write_text(json.dumps(SQUAD), encoding="utf-8")
    app.run()
    assert not app.exception
    assert _widget(app, "selectbox", "Bundled dataset").options == ["squad"]
    assert any("scifact" in i.value and "cmrc2018" in i.value and "Not found" in i.value for i in app.info)

    _widget(app, "selectbox", "Compare with preset").set_value("Vector only")
    _run(app)

    results = app.session_state[RESULTS_KEY]
    current, vector = results["runs"]
    assert (current.label, vector.label) == ("Current settings", "Preset: Vector only")
    assert current.n_queries == vector.n_queries == 3
    assert current.metrics["recall@1"] == 1.0
    assert len(current.recall_curve) == len(vector.recall_curve) == 20
    assert list((tmp_path / "home" / "eval").iterdir())  # the index was built in the (test) cache
    table = app.dataframe[0].value
    assert list(table.columns) == ["Current settings", "Preset: Vector only"]
    assert table.loc["recall@1", "Current settings"] == 1.0 and "latency p95 (ms)" in table.index
    assert len(_charts(app)) == 2  # recall@k curve and latency histogram
    histogram = latency_frame([current, vector]).groupby("settings")["questions"].sum()
    assert histogram.to_dict() == {"Current settings": 3, "Preset: Vector only": 3}
    assert list(recall_frame([current, vector]).index) == list(range(1, 21))
    assert app.get("progress")[-1].value == 100
    assert any(s.label == "Evaluation finished" for s in app.status)


def test_no_bundled_sets_says_so_and_offers_the_upload(app: AppTest) -> None:
    app.run()
    assert not app.exception
    assert _widget(app, "radio", "Question set").value == "Upload a file"
    _widget(app, "radio", "Question set").set_value("Bundled dataset").run()
    assert any("No bundled dataset is available" in w.value for w in app.warning)
    assert _widget(app, "button", "Run evaluation").disabled


def test_csv_question_set_is_scored_against_the_library(app: AppTest, tmp_path: Path) -> None:
    app.run()
    from rag.ingest.ingestor import Ingestor
    from ui.resources import base_config, get_store

    small = base_config().with_overrides({"chunking.chunk_size": 40, "chunking.chunk_overlap": 0})
    assert Ingestor(get_store(base_config()), small).ingest_path(fixtures.make_english_pdf(tmp_path, pages=4)).ok

    _widget(app, "file_uploader", "Question set file").set_value(("questions.csv", CSV.encode(), "text/csv"))
    _widget(app, "selectbox", "Compare with preset").set_value("(none)")
    app.run()
    _run(app)

    (run,) = app.session_state[RESULTS_KEY]["runs"]
    assert run.n_queries == 3
    assert run.per_query_recall["q1"][0] == 1.0 and run.per_query_recall["q3"] == [0.0] * 20
    assert any("missing.pdf" in note for note in run.notes)
    assert list(app.dataframe[0].value.columns) == ["Current settings"]
    assert any("missing.pdf" in c.value for c in app.caption)


def test_csv_against_an_empty_library_explains_what_to_do(app: AppTest) -> None:
    app.run()
    _widget(app, "file_uploader", "Question set file").set_value(("questions.csv", CSV.encode(), "text/csv"))
    app.run()
    _run(app)
    assert any("library is empty" in e.value and "Documents page" in e.value for e in app.error)
    assert RESULTS_KEY not in app.session_state


def test_malformed_upload_is_an_error_not_a_traceback(app: AppTest) -> None:
    app.run()
    _widget(app, "file_uploader", "Question set file").set_value(("broken.json", b"{not json", "application/json"))
    app.run()
    _run(app)
    assert any("broken.json" in e.value and "Hint" in e.value for e in app.error)
    assert any(s.label == "Evaluation failed" for s in app.status)


def test_rewrite_settings_offer_the_llm_and_say_when_it_was_not_loaded(app: AppTest, eval_data: Path,
                                                                       monkeypatch) -> None:
    monkeypatch.setenv("RAG_QUERY__REWRITE", "true")
    (eval_data / "squad-v1.1-dev.json").write_text(json.dumps(SQUAD), encoding="utf-8")
    app.run()
    assert _widget(app, "toggle", "Load the LLM for query rewrite / HyDE").value is False
    _widget(app, "selectbox", "Compare with preset").set_value("(none)")
    _run(app)
    (current,) = app.session_state[RESULTS_KEY]["runs"]
    assert current.fallbacks == {"rewrite": 3} and any("no LLM was loaded" in n for n in current.notes)
    assert any("no LLM was loaded" in c.value for c in app.caption)


def test_the_llm_is_taken_from_the_shared_engine_when_asked_for(app: AppTest, eval_data: Path, monkeypatch) -> None:
    import ui.resources
    from tests.fakes import ScriptedLLM

    llm = ScriptedLLM(replies=['{"variants": ["basalt shield volcano Hawaii"]}'])
    asked: list = []

    def fake_engine(config):
        asked.append(config)
        from rag.answer.llm_runner import LLMRunner

        return type("Engine", (), {"llm": LLMRunner(llm)})()

    monkeypatch.setattr(ui.resources, "get_engine", fake_engine, raising=False)
    monkeypatch.setenv("RAG_QUERY__REWRITE", "true")
    (eval_data / "squad-v1.1-dev.json").write_text(json.dumps(SQUAD), encoding="utf-8")
    app.run()
    _widget(app, "toggle", "Load the LLM for query rewrite / HyDE").set_value(True)
    _widget(app, "selectbox", "Compare with preset").set_value("(none)")
    _run(app)

    (current,) = app.session_state[RESULTS_KEY]["runs"]
    assert asked and asked[0].query.rewrite
    assert len(llm.prompts) >= 3  # every question was rewritten by the LLM
    assert any("sample of 50" in note for note in current.notes)
    assert not any("no LLM was loaded" in note for note in current.notes)


def test_rerank_settings_use_the_cached_cross_encoder(app: AppTest, eval_data: Path, monkeypatch) -> None:
    import ui.resources

    class Scorer:
        pairs: list = []

        def predict(self, pairs, **kwargs):
            Scorer.pairs += list(pairs)
            return [float(len(set(q.lower().split()) & set(t.lower().split()))) for q, t in pairs]

    monkeypatch.setattr(ui.resources, "_reranker", lambda model_path: Scorer())
    monkeypatch.setattr(ui.resources, "get_engine", lambda config: pytest.fail("rerank alone must not load the LLM"))
    monkeypatch.setenv("RAG_RERANK__ENABLED", "true")
    monkeypatch.setenv("RAG_RERANK__MODEL_PATH", "/models/cross-encoder")
    (eval_data / "squad-v1.1-dev.json").write_text(json.dumps(SQUAD), encoding="utf-8")
    app.run()
    _widget(app, "selectbox", "Compare with preset").set_value("(none)")
    _run(app)

    (current,) = app.session_state[RESULTS_KEY]["runs"]
    assert Scorer.pairs and "rerank" not in current.fallbacks
    assert current.metrics["recall@1"] == 1.0

"""The Compare page in Streamlit's AppTest: two settings, two answers, differing sources marked."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import fixtures
from tests.app.conftest import ANSWER, QUESTION, RoutedLLM, ingest, open_app
from tests.markdown_check import shown_text



def side(app: AppTest, heading: str):
    """The result column headed ``heading``."""
    return next(c for c in app.columns if [h.value for h in c.subheader] == [heading])


@pytest.fixture
def app(app_llm: RoutedLLM) -> AppTest:
    return open_app("pages/compare.py")


def test_two_presets_answer_side_by_side_with_differing_sources_marked(app: AppTest, tmp_path: Path) -> None:
    ingest(fixtures.make_english_pdf(tmp_path), fixtures.make_markdown(tmp_path), fixtures.make_docx(tmp_path))
    app.run()
    assert not app.exception
    assert app.selectbox(key="compare_A_preset").value == "Current settings"
    app.selectbox(key="compare_A_preset").set_value("Default")
    app.selectbox(key="compare_B_preset").set_value("Vector only").run()
    app.number_input(key="compare_B_Vector only_retrieval.top_k").set_value(2).run()
    differences = app.dataframe[0].value
    assert set(differences["setting"]) == {"retrieval.sources", "retrieval.top_k"}

    app.text_input(key="compare_question").set_value(QUESTION)
    next(b for b in app.button if b.label == "Compare").click().run()
    assert not app.exception and not app.error
    shown = app.session_state["compare_results"]
    a, b = shown["A"]["result"], shown["B"]["result"]
    assert shown["A"]["name"] == "Default" and shown["B"]["name"] == "Vector only"
    assert len(a.sources) > len(b.sources) == 2
    assert a.trace["retrieval"]["stages"] and "bm25" not in {s["name"] for s in b.trace["retrieval"]["stages"]}
    # both answers, side by side
    left, right = side(app, "A · Default"), side(app, "B · Vector only")
    assert any(shown_text(md.value) == ANSWER for md in left.markdown)
    assert any(shown_text(md.value) == ANSWER for md in right.markdown)
    # the sources A used and B did not carry a badge, and only those
    only_a = {s.n for s in a.sources} - {s.n for s in a.sources if s.chunk_id in {x.chunk_id for x in b.sources}}
    marked = [md.value for md in left.markdown if "not in B" in md.value]
    assert only_a and len(marked) == len(only_a)
    assert all(any(f"**[{n}]**" in m for m in marked) for n in only_a)
    # per-stage timings and scores for both sides, reflection-free here
    summary = next(d.value for d in app.dataframe if "sources" in d.value.index)
    assert list(summary.columns) == ["A", "B"] and summary.loc["sources"].tolist() == [len(a.sources), 2]
    scores = app.dataframe[-1].value
    assert list(scores.columns) == ["A", "B"] and "final" in scores.index
    assert app.get("arrow_vega_lite_chart") or app.get("vega_lite_chart")


def test_reflection_preset_shows_its_score(app: AppTest, llm: RoutedLLM, tmp_path: Path) -> None:
    ingest(fixtures.make_english_pdf(tmp_path))
    app.run()
    app.selectbox(key="compare_B_preset").set_value("Careful (reflection)").run()
    app.text_input(key="compare_question").set_value(QUESTION)
    next(b for b in app.button if b.label == "Compare").click().run()
    assert not app.exception
    b = app.session_state["compare_results"]["B"]["result"]
    a = app.session_state["compare_results"]["A"]["result"]
    assert a.reflection == []  # A (current settings) does not reflect
    # B's context is graded once (8.67 from the scripted grade clears min_score 7, so no second round)
    assert [(r["round"], r["score"], r["selected"]) for r in b.reflection] == [(1, 8.67, True)]
    assert any("Context graded 8.67/10 by reflection (round 1 of 1 kept)" in c.value
               for c in side(app, "B · Careful (reflection)").caption)
    assert not any("graded" in c.value for c in side(app, "A · Current settings").caption)
    summary = next(d.value for d in app.dataframe if "reflection score" in d.value.index)
    assert summary.loc["reflection score", "B"] == 8.67


def test_invalid_edit_shows_an_error_and_disables_compare(app: AppTest, tmp_path: Path) -> None:
    ingest(fixtures.make_english_pdf(tmp_path))
    app.run()
    app.toggle(key="compare_A_Current settings_rerank.enabled").set_value(True).run()
    assert any("Settings A are not valid" in shown_text(e.value) and "rerank.model_path" in shown_text(e.value)
               for e in app.error)
    assert next(b for b in app.button if b.label == "Compare").disabled


def test_empty_index_points_to_documents(app: AppTest) -> None:
    app.run()
    assert not app.exception
    assert any("No documents are indexed yet" in info.value for info in app.info)

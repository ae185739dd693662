"""Hostile documents, file names, presets and model output on every page (AppTest): nothing Streamlit
would render as Markdown holds a live link, image, HTML or maths (tests/app/markup.py reads every
such string), and the literal text is what the reader sees. The real-browser check (nothing fetched,
no <img>/<a> in the DOM) is tests/e2e/test_hostile_browser.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import rag.evaluation.run
from tests import hostile
from tests.app.conftest import RoutedLLM, ingest, open_app
from tests.app.markup import live
from tests.markdown_check import shown_text


def _shown(app: AppTest) -> str:
    return " ".join(shown_text(md.value) for md in app.markdown)


@pytest.fixture
def hostile_llm(app_llm: RoutedLLM) -> RoutedLLM:
    app_llm.replies = [hostile.ANSWER]
    return app_llm


def test_chat_shows_a_hostile_answer_file_name_and_passage_as_text(hostile_llm: RoutedLLM, tmp_path: Path) -> None:
    ingest(hostile.make_hostile_pdf(tmp_path))
    app = open_app()
    app.run()
    assert [o for o in app.multiselect(key="chat_doc_filter").options] == [hostile.SHOWN_NAME]
    app.chat_input[0].set_value(hostile.QUESTION).run()
    assert not app.exception, app.exception
    result = app.session_state["chat_messages"][-1]["result"]
    assert result.citations and result.answer.startswith("The notes say ![x](")  # the model's text, kept as data
    assert live(app) == []
    shown = _shown(app)
    for literal in hostile.ANSWER_LITERALS:
        assert literal in shown, literal
    # the citation viewer, its page image caption and the trace table name the file visibly
    citation = next(s for s in app.selectbox if s.label == "Citation")
    assert citation.options[0].startswith(f"[1] {hostile.SHOWN_NAME} · p. 1")
    assert [shown_text(c) for c in app.image[0].captions] == [f"{hostile.SHOWN_NAME} · page 1"]
    trace = next(e for e in app.expander if e.label == "Retrieval trace")
    assert set(trace.dataframe[0].value["document"]) == {hostile.SHOWN_NAME}
    # the sources panel: the name escaped, the passage as plain text
    sources = next(e for e in app.expander if e.label.startswith("Sources ("))
    assert any(hostile.SHOWN_NAME in shown_text(md.value) for md in sources.markdown)
    assert any(hostile.SECRET_IMAGE in t.value for t in sources.text)


def test_documents_page_shows_hostile_names_and_chunk_text_as_text(app_data: Path, tmp_path: Path) -> None:
    from ui.resources import base_config, get_ingest_queue

    pdf = hostile.make_hostile_pdf(tmp_path).read_bytes()
    app = open_app("pages/documents.py")
    app.run()
    app.file_uploader[0].set_value([(hostile.HOSTILE_NAME, pdf, "application/pdf"),
                                    (hostile.REJECTED_NAME, pdf, "application/pdf")])
    app.button[0].click().run()
    assert not app.exception
    assert live(app) == []  # the toast and the progress bars of the queued files
    get_ingest_queue(base_config()).wait(timeout=120)
    app.run()
    assert not app.exception
    assert live(app) == []
    assert any(shown_text(s.value).startswith(f"{hostile.SHOWN_NAME}: 1 pages") for s in app.success)
    assert any(shown_text(e.value).startswith(f"file name “{hostile.SHOWN_REJECTED}” contains HTML")
               or hostile.SHOWN_REJECTED in shown_text(e.value) for e in app.error)
    assert list(app.dataframe[0].value["name"]) == [hostile.SHOWN_NAME]
    inspect = next(s for s in app.selectbox if s.label == "Inspect a document")
    assert inspect.options == [f"{hostile.SHOWN_NAME} (completed)"]
    chunk_labels = [shown_text(e.label) for e in app.expander if e.label.startswith("#")]
    assert chunk_labels and chunk_labels[0].startswith(f"#0 · p. 1 · {hostile.SECRET_IMAGE}")

    next(b for b in app.button if b.label == "Re-index").click().run()
    assert not app.exception
    assert any(shown_text(s.label).startswith(f"{hostile.SHOWN_NAME}: completed") for s in app.status)
    assert live(app) == []


def test_compare_page_shows_hostile_answers_and_preset_names_as_text(hostile_llm: RoutedLLM, tmp_path: Path) -> None:
    from rag.presets import PresetStore
    from ui.resources import base_config

    ingest(hostile.make_hostile_pdf(tmp_path))
    preset = "www.example.org _x_"
    PresetStore.for_config(base_config()).save(preset, base_config())
    app = open_app("pages/compare.py", timeout_s=120)
    app.run()
    app.selectbox(key="compare_A_preset").set_value(preset).run()
    app.text_input(key="compare_question").set_value(hostile.QUESTION)
    next(b for b in app.button if b.label == "Compare").click().run()
    assert not app.exception, app.exception
    assert app.session_state["compare_results"]["A"]["result"] is not None
    assert live(app) == []
    assert any(shown_text(h.value) == f"A · {preset}" for h in app.subheader)
    shown = _shown(app)
    for literal in hostile.ANSWER_LITERALS:
        assert literal in shown, literal


def test_evaluation_errors_quote_a_hostile_upload_name_as_text(app_data: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_EVAL_DATA", str(tmp_path / "none"))
    monkeypatch.setattr(rag.evaluation.run, "EVAL_HOME", tmp_path / "home")
    app = open_app("pages/evaluation.py", timeout_s=120)
    app.run()
    app.radio(key="eval_source").set_value("Upload a file").run()
    name = f"www.example.org ![x](https:{hostile.HOST}?q=eval) _x_.json"  # no slash: the page keeps the base name
    app.file_uploader(key="eval_upload").set_value([(name, json.dumps({"data": "nope"}).encode(), "application/json")])
    app.run()
    next(b for b in app.button if b.label == "Run evaluation").click().run()
    assert not app.exception, app.exception
    assert app.error and live(app) == []
    assert any(name in shown_text(e.value) for e in app.error)


def test_settings_page_quotes_a_hostile_preset_file_and_server_as_text(app_data: Path) -> None:
    import yaml

    app = open_app("pages/settings.py")
    app.run()
    uploader = next(u for u in app.file_uploader if u.label == "Upload a preset (YAML)")
    name = f"www.example.org ![p](https:{hostile.HOST}?q=preset) _x_.yaml"
    preset = yaml.safe_dump({"llm": {"backend": "openai", "base_url": f"http://{hostile.HOST}/v1",
                                     "model": f"![m](http://{hostile.HOST}/m)"}}).encode()
    uploader.set_value((name, preset, "application/x-yaml"))
    app.run()
    next(b for b in app.button if b.label == "Apply uploaded preset").click().run()
    assert not app.exception, app.exception
    assert live(app) == []
    assert any(shown_text(s.value).startswith(f"Applied {name}. The LLM endpoint") for s in app.success)
    # the endpoint a preset sets waits for confirmation, and the notice quotes the file name as text
    assert any(shown_text(w.value).startswith(f"Not applied from “{name}”") for w in app.warning)
    next(b for b in app.button if b.label == "Confirm LLM endpoint").click().run()
    assert live(app) == []
    assert any(f"http://{hostile.HOST}/v1) · model ![m](http://{hostile.HOST}/m)" in shown_text(c.value)
               for c in app.caption)

    bad = yaml.safe_dump({"storage": {"data_dir": "/elsewhere"}}).encode()
    next(u for u in app.file_uploader if u.label == "Upload a preset (YAML)").set_value((name, bad, "text/yaml"))
    app.run()
    next(b for b in app.button if b.label == "Apply uploaded preset").click().run()
    assert live(app) == []
    assert any(shown_text(e.value).startswith(f"{name}: ") for e in app.error)

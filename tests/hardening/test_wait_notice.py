"""The Chat page while another session holds the embedded model: "Waiting for the model (N questions
ahead)" until it is free, then the answer; past ``llm.queue_timeout_s`` a message instead of a hang.

The app's own ``EmbeddedLLM`` around the llama.cpp stand-in answers; the test holds the model from
another thread, as another browser session's answer would.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

import rag.runtime
from rag.lab.stand_ins import ScriptedLlama
from rag.models.llm_embedded import EmbeddedLLM
from rag.models.llms import LLMHandle
from tests import fixtures
from tests.app.conftest import QUESTION, app_data, ingest, open_app  # noqa: F401 - app_data is a fixture

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def held(app_data: Path, monkeypatch) -> tuple[EmbeddedLLM, threading.Event]:  # noqa: F811
    """The app's model (``EmbeddedLLM`` + stand-in) and the event that, while clear, keeps it held."""
    hold = threading.Event()
    llm = EmbeddedLLM(ScriptedLlama(hold=hold), model_name="scripted")
    monkeypatch.setattr(rag.runtime, "build_llm_handle", lambda config, **_: LLMHandle(llm, "embedded", "scripted"))
    yield llm, hold
    hold.set()


@pytest.fixture
def shown_alerts(monkeypatch) -> list[str]:
    """Every ``st.info`` body any page drew during the test, including ones replaced later in the run."""
    shown: list[str] = []
    original = DeltaGenerator.info

    def spy(self, body, *args, **kwargs):
        shown.append(str(body))
        return original(self, body, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "info", spy)
    return shown


def _another_session_answers(llm: EmbeddedLLM) -> threading.Thread:
    thread = threading.Thread(target=lambda: llm.complete("someone else's question"), daemon=True)
    thread.start()
    llm._llama.entered.wait(5)
    return thread


def test_the_chat_says_it_waits_for_the_model_then_answers(held, shown_alerts: list[str], tmp_path: Path) -> None:
    llm, hold = held
    ingest(fixtures.make_english_pdf(tmp_path))
    app = open_app().run()
    other = _another_session_answers(llm)
    threading.Timer(1.5, hold.set).start()  # the other answer ends while this question waits

    app.chat_input[0].set_value(QUESTION).run()

    assert "Waiting for the model (1 question ahead)…" in shown_alerts
    assert not app.exception and not app.error
    answer = app.chat_message[-1].markdown[0].value
    assert answer.endswith("\\[1\\].") or answer.endswith("[1]."), answer
    other.join(5)
    assert llm._llama.max_active == 1


def test_a_question_that_waits_too_long_shows_how_many_were_ahead(held, monkeypatch, tmp_path: Path) -> None:
    llm, hold = held
    monkeypatch.setenv("RAG_LLM__QUEUE_TIMEOUT_S", "1")
    st.cache_resource.clear()
    ingest(fixtures.make_english_pdf(tmp_path))
    app = open_app().run()
    _another_session_answers(llm)

    app.chat_input[0].set_value(QUESTION).run()

    assert not app.exception
    errors = [e.value for e in app.error]
    assert any("The model is busy" in e and "1 question was ahead of yours" in e and "within 1 s" in e
               for e in errors), errors
    assert llm.waiting == 0  # the question left the queue when it gave up

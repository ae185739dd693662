"""Showing untrusted text in Streamlit: model output (also while it streams) and labels built from
documents, file names, presets and error messages.

Streamlit renders Markdown in ``st.markdown`` and in nearly every label: expanders, buttons, captions,
alerts, toasts, progress and status text, subheaders, even ``st.image`` captions. So:

- model output goes through ``show_answer`` / ``stream_answer_text`` (``rag.text.safe_markdown``):
  harmless formatting stays, links, images and HTML show as text;
- a label goes through ``label`` (escaped, one line, invisible characters spelled out);
- plain-text places (select options, table cells, ``st.text``) take ``plain``, which only spells out
  bidi overrides and zero-width characters, so a name cannot disguise its extension.
"""

from __future__ import annotations

import time
from typing import Iterable

import streamlit as st

from rag.text.escape import escape_label, escape_markdown, plain_label
from rag.text.safe_markdown import safe_markdown

__all__ = ["escape_markdown", "label", "plain", "safe_markdown", "show_answer", "stream_answer_text"]

label = escape_label
plain = plain_label


def show_answer(text: str) -> None:
    """Model output as Markdown with no live link, image or HTML.

    Args:
        text: The answer (or a draft) as the model wrote it.
    """
    st.markdown(safe_markdown(text))


def stream_answer_text(chunks: Iterable[str], *, refresh_s: float = 0.05) -> str:
    """Show streamed model output as it arrives, re-rendered through ``safe_markdown``; returns the text.

    Each redraw parses the whole text so far, so it is throttled to one per ``refresh_s``; the last
    redraw always shows the complete text.

    Args:
        chunks: The token stream (consumed once).
        refresh_s: Least time between two redraws while tokens arrive.
    """
    slot = st.empty()
    text = ""
    drawn = ""
    last = 0.0
    for chunk in chunks:
        text += chunk
        now = time.monotonic()
        if now - last >= refresh_s:
            slot.markdown(safe_markdown(text))
            drawn, last = text, now
    if text != drawn or not text:
        slot.markdown(safe_markdown(text))
    return text

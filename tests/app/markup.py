"""Every string an AppTest run hands Streamlit to render as Markdown, to check that none is live."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.markdown_check import live_markup


def markdown_strings(app: AppTest) -> list[tuple[str, str]]:
    """(kind, text) for every Markdown body or label: markdown, captions, alerts, headings, toasts,
    expander, status and button labels, progress text, image captions."""
    found: list[tuple[str, str]] = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "subheader", "header", "title",
                 "toast"):
        found += [(kind, element.value) for element in getattr(app, kind)]
    found += [("expander", block.label) for block in app.expander]
    found += [("status", block.label) for block in app.status]
    found += [("button", button.label) for button in app.button]
    found += [("progress", bar.text) for bar in app.get("progress")]
    found += [("image caption", caption) for image in app.image for caption in image.captions]
    return found


def live(app: AppTest) -> list[tuple[str, str, list[str]]]:
    """The Markdown strings of ``app`` that would render a link, an image, HTML or maths."""
    return [(kind, text, markup) for kind, text in markdown_strings(app) if (markup := live_markup(text))]

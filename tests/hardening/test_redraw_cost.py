"""A finding of the load suite: every redraw of the Chat page re-encoded every citation page in the history.

``st.image`` given PNG bytes without an output format converts them to JPEG (decode, encode) on every
script run, and the Chat page redraws up to ten answers, each with its highlighted page, after every
question: with a full history that was ~60% of the server's CPU per question (measured with the load
benchmark). The page is drawn once (``ui.resources.page_image``, cached) and handed over as it is.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.elements.lib import image_utils

from tests import fixtures
from tests.app.conftest import QUESTION, app_data, app_llm, ingest, llm, open_app  # noqa: F401 - fixtures


def test_a_redraw_hands_over_the_cited_pages_without_encoding_them_again(app_llm, tmp_path: Path,
                                                                         monkeypatch) -> None:
    ingest(fixtures.make_english_pdf(tmp_path))
    app = open_app().run()
    for number in range(3):
        app.chat_input[0].set_value(f"{QUESTION} ({number})").run()
    assert len(app.image) == 3  # three answers in the history, each with its highlighted page
    encoded: list[str] = []
    original = image_utils._pil_to_bytes
    monkeypatch.setattr(image_utils, "_pil_to_bytes",
                        lambda image, format="JPEG", quality=100: encoded.append(format) or original(image, format,
                                                                                                     quality))

    app.run()  # what every later question, rerun or click costs

    assert encoded == []
    assert all(url.endswith(".png") for image in app.image for url in image.value)

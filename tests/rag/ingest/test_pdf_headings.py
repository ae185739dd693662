"""Headings of a PDF without an outline: larger type, and bold lines at the body size (filings)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pymupdf

from rag.config import RagConfig
from rag.ingest.chunking import chunk_document
from rag.ingest.parse import parse_file

BODY = ("Revenue grew in the quarter because more trips were taken in every region, and the company "
        "expects this to continue while costs rise more slowly than revenue over the coming year.")


def _filing(directory: Path) -> Path:
    """A cover page in large type, then pages whose headings are bold at the body size."""
    doc = pymupdf.open()
    cover = doc.new_page()
    cover.insert_textbox(pymupdf.Rect(72, 72, 520, 120), "QUARTERLY REPORT", fontname="tibo", fontsize=16)
    cover.insert_textbox(pymupdf.Rect(72, 130, 520, 150), "OR", fontname="tibo", fontsize=11)
    cover.insert_textbox(pymupdf.Rect(72, 160, 520, 400), BODY, fontname="tiro", fontsize=9)
    pages = (["Results of Operations"],
             ["Liquidity and Capital Resources", "Cash Flows"],  # a heading and its subheading
             ["Three Months Ended", "March 31", "In Millions"])  # a bold run this long is a table header
    for bold_lines in pages:
        page = doc.new_page()
        y = 72
        for text in bold_lines:
            page.insert_textbox(pymupdf.Rect(72, y, 520, y + 18), text, fontname="tibo", fontsize=9)
            y += 28
        page.insert_textbox(pymupdf.Rect(72, y, 520, y + 170), BODY, fontname="tiro", fontsize=9)
        # a bold sentence is emphasis, not a heading
        page.insert_textbox(pymupdf.Rect(72, y + 200, 520, y + 220), "Revenue grew in every region.",
                            fontname="tibo", fontsize=9)
    path = directory / "filing.pdf"
    doc.save(path)
    doc.close()
    return path


def test_bold_lines_at_the_body_size_become_headings_under_the_cover_headings(tmp_path: Path) -> None:
    document = parse_file(_filing(tmp_path))
    titles = [section.title for section in sorted(document.sections, key=lambda section: section.offset)]
    assert "Results of Operations" in titles
    assert "Liquidity and Capital Resources" in titles and "Cash Flows" in titles
    assert not {"Three Months Ended", "March 31", "In Millions"} & set(titles)
    assert "Revenue grew in every region." not in titles  # ends like a sentence
    assert "OR" not in titles  # too few letters to name a section
    chunks = chunk_document(document, "d", replace(RagConfig().chunking, strategy="section"))
    on_page_2 = [chunk for chunk in chunks if chunk.page_start == 2]
    assert on_page_2 and all(chunk.heading_path.endswith("Results of Operations") for chunk in on_page_2)

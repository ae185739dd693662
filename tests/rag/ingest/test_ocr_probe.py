"""The OCR language probe's decision without Tesseract: its bands, and the models' vote weighed against
the glyph vote (tests/rag/ingest/test_glyph_script.py). The probe on real scans is in
tests/integration/test_ocr_probe_real.py."""

from __future__ import annotations

import pymupdf

from rag.ingest import ocr_probe
from rag.ingest.ocr_probe import MAX_BANDS, probe_bands, probe_script

SHARED = "的是在一了和有人中大上也"  # the same in both scripts
SIMPLIFIED = "这个国家时间会议发展经济东方来说"
TRADITIONAL = "這個國家時間會議發展經濟東方來說"


def _page_with(draw) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    draw(page)
    return page


def test_bands_skip_ruling_lines_and_blank_space_and_do_not_overlap() -> None:
    def draw(page: pymupdf.Page) -> None:
        for y in range(60, 300, 12):  # a ruled table: full-width lines, little else
            page.draw_line((20, y), (575, y), width=1.5)
        page.insert_textbox(pymupdf.Rect(60, 500, 535, 800), SIMPLIFIED * 12, fontname="china-s", fontsize=12)

    page = _page_with(draw)
    bands = probe_bands(page)
    assert 1 <= len(bands) <= MAX_BANDS
    assert bands[0].y0 >= 480  # the text, not the table's lines nor the blank top
    assert all(a.y1 <= b.y0 or b.y1 <= a.y0 for a in bands for b in bands if a is not b)


def test_a_blank_page_still_gives_one_band() -> None:
    page = _page_with(lambda page: None)
    assert probe_bands(page) == [page.rect]


def _fake_bands(monkeypatch, readings: list[tuple[str, int, int]]) -> list[int]:
    """``probe_script`` reads ``readings`` (text, glyph votes, glyphs compared) band by band; returns the calls."""
    calls: list[int] = []

    def read(page, band, tessdata):
        calls.append(1)
        return readings[len(calls) - 1]

    monkeypatch.setattr(ocr_probe, "probe_bands", lambda page: [pymupdf.Rect(0, i, 1, i + 1) for i in range(3)])
    monkeypatch.setattr(ocr_probe, "_read_band", read)
    return calls


def test_an_even_models_vote_is_settled_by_the_glyphs(monkeypatch) -> None:
    # The benchmark page the old probe misread: the mixed run wrote 18 simplified-only and 19
    # traditional-only characters (its words split between the models), so counting chose chi_tra.
    text = "为" * 18 + "為" * 19
    calls = _fake_bands(monkeypatch, [(text, -12, 30), ("", 0, 0), ("", 0, 0)])
    assert probe_script(None, None) == "chi_sim"
    assert len(calls) == 1  # 37 script-specific characters are enough evidence
    calls = _fake_bands(monkeypatch, [(text, 14, 30), ("", 0, 0), ("", 0, 0)])
    assert probe_script(None, None) == "chi_tra"


def test_thin_evidence_reads_more_bands(monkeypatch) -> None:
    # a table band with two Chinese words, then body text
    calls = _fake_bands(monkeypatch, [("营业收入 2019年 12,345.67", 0, 2), ("這個國家" * 8, 20, 28), ("", 0, 0)])
    assert probe_script(None, None) == "chi_tra"
    assert len(calls) == 2
    calls = _fake_bands(monkeypatch, [("The annual report", 0, 0), ("", 0, 0), ("", 0, 0)])
    assert probe_script(None, None) == "eng"

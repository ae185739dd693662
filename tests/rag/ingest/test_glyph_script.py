"""The glyph vote: which script a line is printed in, from the ink of each glyph, on images the test draws."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from rag.ingest.glyph_script import align, glyph_cells, glyph_vote, text_lines, without_rules
from rag.ingest.ocr_probe import script_of

SHARED = "的是在一了和有人中大上也"  # the same in both scripts
SIMPLIFIED = "这个国家时间会议发展经济东方来说"
TRADITIONAL = "這個國家時間會議發展經濟東方來說"


def _ink(page: pymupdf.Page) -> tuple[np.ndarray, float]:
    pixmap = page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    ink = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.stride)[:, :pixmap.width] < 128
    return ink, pixmap.width / page.rect.width


def _band(printed: str, font: str, size: float = 14) -> tuple[np.ndarray, list[tuple[str, tuple]], float]:
    """``printed`` drawn on one line in ``font``: the ink image, each character's box and the scale."""
    width = 40 + size * 1.1 * len(printed)
    page = pymupdf.open().new_page(width=width, height=size * 3)
    boxes = []
    for index, char in enumerate(printed):
        x = 20 + index * size * 1.1
        page.insert_text((x, size * 2), char, fontname=font, fontsize=size)
        boxes.append((x, size * 0.8, x + size, size * 2.3))
    ink, scale = _ink(page)
    return ink, boxes, scale


def _set_solid(printed: str, font: str, size: float = 12, ruled: bool = False) -> tuple[np.ndarray, float]:
    """``printed`` set as running text (one glyph per em, as a page is typeset), optionally in a ruled table cell."""
    page = pymupdf.open().new_page(width=40 + size * len(printed), height=size * 4)
    page.insert_text((20, size * 2.4), printed, fontname=font, fontsize=size)
    if ruled:
        for y in (size * 1.1, size * 2.9):
            page.draw_line((5, y), (page.rect.width - 5, y), width=1)
        for x in (10, page.rect.width - 10):
            page.draw_line((x, 2), (x, page.rect.height - 2), width=1)
    return _ink(page)


@pytest.mark.parametrize("font", ["china-t", "china-s"])
def test_the_glyph_vote_follows_the_printed_script_not_the_characters_written(font: str) -> None:
    # The failure found: each Chinese model writes (almost) every character in its own script whatever
    # the glyph, so the characters OCR writes cannot say which script is printed. Here the printed
    # script is fixed and the characters "read" are in the other one, as the wrong model writes them.
    printed, written = (SHARED + TRADITIONAL, SHARED + SIMPLIFIED) if font == "china-t" else \
        (SHARED + SIMPLIFIED, SHARED + TRADITIONAL)
    ink, boxes, scale = _band(printed, font)
    vote = glyph_vote(list(zip(written, boxes)), ink, scale)
    assert (vote > 0.5) if font == "china-t" else (vote < -0.5)
    assert script_of(written) == ("chi_sim" if font == "china-t" else "chi_tra")  # what the text alone says


@pytest.mark.parametrize("font", ["china-t", "china-s"])
def test_boxes_that_drift_by_almost_half_a_glyph_still_measure_their_own_glyph(font: str) -> None:
    # The benchmark page the probe misread: Tesseract's character boxes for Chinese are spread over its
    # words and drift, so most boxes cut two glyphs in half and the vote came out near zero (-0.10).
    printed, written = (SHARED + TRADITIONAL, SHARED + SIMPLIFIED) if font == "china-t" else \
        (SHARED + SIMPLIFIED, SHARED + TRADITIONAL)
    size = 12
    ink, scale = _set_solid(printed, font, size)
    drift = [0.45 * size * (1 if index % 2 else -1) for index in range(len(written))]  # ±0.45 em
    boxes = [(20 + index * size + shift, size * 1.4, 20 + (index + 1) * size + shift, size * 2.6)
             for index, shift in enumerate(drift)]
    vote = glyph_vote(list(zip(written, boxes)), ink, scale)
    # measured inside the boxes, these glyphs gave +0.38 whichever script was printed
    assert (vote > 0.6) if font == "china-t" else (vote < -0.6)


def test_the_glyph_vote_is_scale_free() -> None:
    small = glyph_vote(*_with_written(_band(SHARED + TRADITIONAL, "china-t", size=9)))
    large = glyph_vote(*_with_written(_band(SHARED + TRADITIONAL, "china-t", size=24)))
    assert small > 0.5 and large > 0.5


def _with_written(band: tuple[np.ndarray, list, float]) -> tuple[list, np.ndarray, float]:
    ink, boxes, scale = band
    return list(zip(SHARED + SIMPLIFIED, boxes)), ink, scale


def test_no_glyph_evidence_gives_no_vote() -> None:
    ink, boxes, scale = _band("ABCDEFGH", "helv")
    assert glyph_vote(list(zip("ABCDEFGH", boxes)), ink, scale) == 0.0  # no Chinese characters
    differing = [(s, t) for s, t in zip(SIMPLIFIED, TRADITIONAL) if s != t]
    ink, boxes, scale = _band("".join(t for _, t in differing), "china-t")
    # without characters both scripts share there is nothing to scale the ink by
    assert glyph_vote([(s, box) for (s, _), box in zip(differing, boxes)], ink, scale) == 0.0
    blank = np.zeros_like(ink)
    assert glyph_vote(list(zip(SHARED + SIMPLIFIED, boxes)), blank, scale) == 0.0


def test_a_table_cells_rules_are_neither_a_line_nor_a_glyph() -> None:
    text = "营业收入合计"
    ink, scale = _set_solid(text, "china-s", ruled=True)
    assert len(text_lines(ink)) == 1  # the rules join everything into one tall "line"
    clean = without_rules(ink, int(24 * scale))
    lines = text_lines(clean)
    assert len(lines) == 1
    top, bottom = lines[0]
    assert bottom - top < 14 * scale  # the text's height, not the cell's
    assert len(glyph_cells(clean, top, bottom)) == len(text)
    assert clean.sum() > 0.8 * _set_solid(text, "china-s")[0].sum()  # the glyphs' strokes stay


def test_a_glyph_made_of_separate_parts_is_one_cell_and_punctuation_is_none() -> None:
    text = "川小，北儿。训"
    ink, scale = _set_solid(text, "china-s")
    (top, bottom), = text_lines(ink)
    assert len(glyph_cells(ink, top, bottom)) == 5  # 川 小 北 儿 训; the comma and full stop are too small


def test_alignment_keeps_order_and_skips_a_misread() -> None:
    cells = [(0, 10), (12, 22), (24, 34), (36, 46)]
    # four glyphs, but OCR wrote five characters: the third is a spurious extra between two glyphs
    centres = [4.0, 18.0, 23.0, 31.0, 40.0]
    assert align(centres, cells, height=10) == [(0, 0), (1, 1), (3, 2), (4, 3)]
    assert align([100.0], cells, height=10) == []  # too far from every glyph

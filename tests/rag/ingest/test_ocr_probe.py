"""The OCR language probe's decision without Tesseract: the glyph vote on images the test draws, and
the models' vote on text. The probe on real scans is in tests/integration/test_ocr_probe_real.py."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest

from rag.ingest.ocr_probe import glyph_vote, script_of

SHARED = "的是在一了和有人中大上也"  # the same in both scripts
SIMPLIFIED = "这个国家时间会议发展经济东方来说"
TRADITIONAL = "這個國家時間會議發展經濟東方來說"


def _band(printed: str, font: str, size: float = 14) -> tuple[np.ndarray, list[tuple[str, tuple]], float]:
    """``printed`` drawn on one line in ``font``: the ink image, each character's box and the scale."""
    width = 40 + size * 1.1 * len(printed)
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=size * 3)
    boxes = []
    for index, char in enumerate(printed):
        x = 20 + index * size * 1.1
        page.insert_text((x, size * 2), char, fontname=font, fontsize=size)
        boxes.append((x, size * 0.8, x + size, size * 2.3))
    pixmap = page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    ink = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.stride)[:, :pixmap.width] < 128
    return ink, boxes, pixmap.width / page.rect.width


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

"""Scanned pages made from known text, and how well OCR reads them back.

A scan is made the way a scanner would see a printed page: the text is set on a PDF page (PyMuPDF's
``helv`` for English, its built-in ``china-s`` / ``china-t`` CJK fonts for Chinese, so no system font
is needed), the page is rendered to a grayscale image, and the image becomes an image-only PDF page of
the same size. The reference is the text layer of the page before rendering, read by the same parser.

``char_accuracy`` is 1 - edit distance / reference length (the usual 1 - CER), on text normalised so
that layout does not count: NFKC, whitespace runs collapsed for English, whitespace removed for
Chinese (which has none between words).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pymupdf

from rag.answer.highlight import span_rects
from rag.documents import Page

FONTS = {"en": "helv", "zh-s": "china-s", "zh-t": "china-t"}
_MARGIN = 60.0


def make_text_pdf(paragraphs: Sequence[Sequence[str]], path: Path, script: str, *, font_size: float = 11) -> Path:
    """One page per entry of ``paragraphs``, each a list of paragraphs set in ``script``'s font."""
    font = FONTS[script]
    doc = pymupdf.open()
    for page_paragraphs in paragraphs:
        page = doc.new_page(width=595, height=842)
        rect = pymupdf.Rect(_MARGIN, _MARGIN, 595 - _MARGIN, 842 - _MARGIN)
        text = "\n\n".join(page_paragraphs)
        if page.insert_textbox(rect, text, fontname=font, fontsize=font_size, lineheight=1.4) < 0:
            raise ValueError(f"text does not fit one page: {text[:40]!r}…")
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    return path


def make_scan(source: Path, path: Path, *, dpi: int = 150) -> Path:
    """``source`` with every page replaced by a grayscale image of itself at ``dpi`` (no text layer)."""
    with pymupdf.open(source) as original:
        doc = pymupdf.open()
        for page in original:
            scan = doc.new_page(width=page.rect.width, height=page.rect.height)
            scan.insert_image(scan.rect, pixmap=page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY))
        doc.save(path, garbage=3, deflate=True)
        doc.close()
    return path


def normalise(text: str, chinese: bool) -> str:
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"\s+", "", text) if chinese else " ".join(text.split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one numpy row at a time (a page of text in milliseconds)."""
    if not a or not b:
        return max(len(a), len(b))
    codes = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    previous = np.arange(len(b) + 1)
    columns = np.arange(len(b) + 1)
    for i, char in enumerate(a, start=1):
        candidate = np.empty_like(previous)
        candidate[0] = i
        candidate[1:] = np.minimum(previous[:-1] + (codes != ord(char)), previous[1:] + 1)
        # insertions: row[j] = min over k <= j of candidate[k] + (j - k)
        previous = np.minimum.accumulate(candidate - columns) + columns
    return int(previous[-1])


def char_accuracy(reference: str, hypothesis: str, *, chinese: bool) -> tuple[int, int]:
    """(errors, reference characters) after normalisation; accuracy is 1 - errors / characters."""
    ref, hyp = normalise(reference, chinese), normalise(hypothesis, chinese)
    return edit_distance(ref, hyp), len(ref)


@dataclass
class HighlightCheck:
    phrases: int = 0  # phrases of the reference found verbatim in the OCR'd text
    on_target: int = 0  # of those, highlighted where the text page highlights them (IoU >= 0.5)


def compare_highlights(reference: Page, scanned: Page, *, chinese: bool, every: int = 7,
                       length: int = 4) -> HighlightCheck:
    """Highlight phrases on the OCR'd page and on the text page; count those that land on the same spot.

    Phrases are ``length`` words (English) or ``2 * length`` characters (Chinese), one every ``every``
    words or characters of the reference.
    """
    check = HighlightCheck()
    units = [m for m in re.finditer(r"\S" if chinese else r"\S+", reference.text)]
    size = 2 * length if chinese else length
    for first in range(0, max(len(units) - size, 0), every):
        start, end = units[first].start(), units[first + size - 1].end()
        phrase = reference.text[start:end]
        found = scanned.text.find(phrase)
        if found < 0:
            continue
        check.phrases += 1
        truth = _area_rects(span_rects([reference], start, end))
        got = _area_rects(span_rects([scanned], found, found + len(phrase)))
        if truth and got and rect_iou(truth, got) >= 0.5:
            check.on_target += 1
    return check


def _area_rects(found: list[tuple[int, list[list[float]]]]) -> list[list[float]]:
    return [rect for _, rects in found for rect in rects]


def rect_iou(a: list[list[float]], b: list[list[float]]) -> float:
    """Intersection over union of two sets of rectangles, on a 1-point grid (rects of one line don't overlap)."""
    def cells(rects: list[list[float]]) -> set[tuple[int, int]]:
        return {(x, y) for x0, y0, x1, y1 in rects
                for x in range(int(x0), int(np.ceil(x1))) for y in range(int(y0), int(np.ceil(y1)))}

    first, second = cells(a), cells(b)
    union = first | second
    return len(first & second) / len(union) if union else 0.0

"""Which Chinese script a scan is printed in, from the ink of its glyphs rather than from what OCR wrote.

For each character OCR read whose simplified and traditional forms differ (国/國, 这/這), the ink of
its glyph on the scan is compared with the ink of both forms drawn in PyMuPDF's CJK font, scaled by
the characters both scripts share in the same band (so font size, weight and resolution cancel out):
a traditional glyph carries far more strokes, whatever the OCR model wrote for it.

The glyph is found on the image, not taken from the OCR's character box. Tesseract's boxes for
Chinese are spread over its words and drift by up to half a character (on a simplified benchmark
page most boxes cut two glyphs in half, and the vote came out near zero); each text line's glyph
cells are found from the ink instead, and the characters OCR read on that line are aligned to them in
order.
"""

from __future__ import annotations

import math
import re
import statistics
from functools import lru_cache

import numpy as np
import pymupdf

from rag.text.language import CJK_IDEOGRAPHS
from rag.text.script import to_simplified, to_traditional

INK_LEVEL = 128  # gray level below which a pixel is ink
_MIN_SHARED = 3  # shared characters needed to scale the glyph comparison
# A CJK glyph is about as wide as its line is tall: ink runs closer than this make one glyph (川, 小),
# and a cell narrower than _MIN_CELL is punctuation or part of a Latin word.
_MAX_CELL = 1.05
_MIN_CELL = 0.6
_RULE_PT = 24  # an ink run longer than this (in points) is a ruling line, not a stroke of body text
_MAX_DRIFT = 0.5  # how far (in line heights) an OCR box's centre may be from the glyph it is aligned to
_SKIP = 0.5  # alignment cost of a character or a cell left unpaired
_IDEOGRAPH = re.compile(f"[{CJK_IDEOGRAPHS}]")

Box = tuple[float, float, float, float]


def glyph_vote(chars: list[tuple[str, Box]], ink: np.ndarray, scale: float) -> float:
    """(traditional - simplified) / all, over characters whose glyph's ink is nearer one script's form."""
    votes, counted = glyph_tally(chars, ink, scale)
    return votes / max(counted, 1)


def glyph_tally(chars: list[tuple[str, Box]], ink: np.ndarray, scale: float) -> tuple[int, int]:
    """(votes, characters compared): each character whose two forms differ votes +1 when its glyph's ink
    is nearer the traditional form, -1 when nearer the simplified one.

    Args:
        chars: OCR'd characters with their (approximate) boxes, in the probe page's coordinates.
        ink: The band image as booleans (True = ink), one entry per pixel.
        scale: Pixels per unit of the boxes.
    """
    shared: list[float] = []
    differing: list[tuple[int, str, str]] = []
    for char, amount in glyph_inks(chars, ink, scale):
        simplified, traditional = _forms(char)
        if simplified == traditional:
            shared.append(amount / _reference_ink(char))
        else:
            differing.append((amount, simplified, traditional))
    if len(shared) < _MIN_SHARED or not differing:
        return 0, 0
    factor = statistics.median(shared)  # this band's ink per unit of reference ink
    votes = 0
    for amount, simplified, traditional in differing:
        to_simple = abs(math.log(amount / (factor * _reference_ink(simplified))))
        to_traditional = abs(math.log(amount / (factor * _reference_ink(traditional))))
        votes += (to_simple > to_traditional) - (to_traditional > to_simple)
    return votes, len(differing)


def glyph_inks(chars: list[tuple[str, Box]], ink: np.ndarray, scale: float) -> list[tuple[str, int]]:
    """Each Chinese character OCR read, paired with the ink of the glyph cell it aligns to on its line."""
    ink = without_rules(ink, int(_RULE_PT * scale))
    lines = text_lines(ink)
    found: list[tuple[str, int]] = []
    for top, bottom in lines:
        height = bottom - top
        on_line = sorted(((box[0] + box[2]) / 2 * scale, char) for char, box in chars
                         if len(char) == 1 and _IDEOGRAPH.fullmatch(char)
                         and top <= (box[1] + box[3]) / 2 * scale < bottom)
        cells = glyph_cells(ink, top, bottom)
        for read, cell in align([centre for centre, _ in on_line], cells, height):
            x0, x1 = cells[cell]
            amount = int(ink[top:bottom, x0:x1].sum())
            if amount:
                found.append((on_line[read][1], amount))
    return found


def without_rules(ink: np.ndarray, longest: int) -> np.ndarray:
    """``ink`` without its ruling lines: horizontal and vertical ink runs longer than ``longest`` pixels.

    A table's rules would join its rows into one "line" and its cells into one "glyph".
    """
    rules = np.zeros_like(ink)
    for image, marks in ((ink, rules), (ink.T, rules.T)):  # rows, then columns (a transposed view)
        for row in range(image.shape[0]):
            for start, end in _runs(image[row]):
                if end - start > longest:
                    marks[row, start:end] = True
    kept = ink & ~rules
    return kept


def text_lines(ink: np.ndarray) -> list[tuple[int, int]]:
    """(top, bottom) pixel rows of the text lines in ``ink``; a line cut by the band's edge is left out."""
    runs = [(top, bottom) for top, bottom in _runs(ink.sum(axis=1)) if bottom - top >= 6]
    if not runs:
        return []
    typical = statistics.median(bottom - top for top, bottom in runs)
    return [(top, bottom) for top, bottom in runs if bottom - top >= 0.8 * typical]


def glyph_cells(ink: np.ndarray, top: int, bottom: int) -> list[tuple[int, int]]:
    """(left, right) pixel columns of the glyph-sized cells of the line between rows ``top`` and ``bottom``."""
    height = bottom - top
    cells: list[tuple[int, int]] = []
    for left, right in _runs(ink[top:bottom].sum(axis=0)):
        if cells and right - cells[-1][0] <= _MAX_CELL * height:
            cells[-1] = (cells[-1][0], right)
        else:
            cells.append((left, right))
    return [(left, right) for left, right in cells if right - left >= _MIN_CELL * height]


def align(centres: list[float], cells: list[tuple[int, int]], height: float) -> list[tuple[int, int]]:
    """(character, cell) index pairs of the in-order alignment of box centres to cells that costs least.

    A pair costs the centre's distance from the cell's middle in line heights (pairs further than
    ``_MAX_DRIFT`` are not allowed); leaving a character or a cell unpaired (a misread, a Latin word
    wide enough to look like a glyph) costs ``_SKIP``.
    """
    rows, columns = len(centres), len(cells)
    cost = np.full((rows + 1, columns + 1), np.inf)
    cost[0, :] = np.arange(columns + 1) * _SKIP
    cost[:, 0] = np.arange(rows + 1) * _SKIP
    move = np.zeros((rows + 1, columns + 1), dtype=np.int8)
    middles = [(left + right) / 2 for left, right in cells]
    for i in range(1, rows + 1):
        for j in range(1, columns + 1):
            drift = abs(centres[i - 1] - middles[j - 1]) / height
            options = (cost[i - 1, j - 1] + (drift if drift < _MAX_DRIFT else np.inf),
                       cost[i - 1, j] + _SKIP, cost[i, j - 1] + _SKIP)
            move[i, j] = int(np.argmin(options))
            cost[i, j] = options[move[i, j]]
    pairs: list[tuple[int, int]] = []
    i, j = rows, columns
    while i and j:
        if move[i, j] == 0:
            pairs.append((i - 1, j - 1))
        i, j = (i - 1, j - 1) if move[i, j] == 0 else (i - 1, j) if move[i, j] == 1 else (i, j - 1)
    return pairs[::-1]


def _runs(profile: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of non-zero entries of ``profile``."""
    inked = np.concatenate(([0], (profile > 0).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(inked))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


@lru_cache(maxsize=4096)
def _forms(char: str) -> tuple[str, str]:
    """The simplified and traditional form of ``char`` (the same character twice when both scripts share it)."""
    simplified = to_simplified(char)
    traditional = to_traditional(simplified, "s2t")
    if len(simplified) != 1 or len(traditional) != 1:
        return char, char
    return simplified, traditional


@lru_cache(maxsize=4096)
def _reference_ink(char: str) -> int:
    """Ink of ``char`` drawn at 48 pt in PyMuPDF's CJK font (Droid Sans Fallback, shipped with PyMuPDF)."""
    doc = pymupdf.open()
    page = doc.new_page(width=60, height=60)
    page.insert_text((5, 50), char, fontname="china-s", fontsize=48)
    pixmap = page.get_pixmap(dpi=72, colorspace=pymupdf.csGRAY)
    doc.close()
    image = np.frombuffer(pixmap.samples, dtype=np.uint8).reshape(pixmap.height, pixmap.stride)[:, :pixmap.width]
    return max(int((image < INK_LEVEL).sum()), 1)

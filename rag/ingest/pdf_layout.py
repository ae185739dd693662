"""Words and lines of one PDF page, grouped into paragraphs, and how to join them into text.

PyMuPDF gives words with boxes plus block/line numbers; this module cuts footnote marks off the words they touch
(``rag.ingest.footnote_marks``), adds each line's font size (for heading detection), rejoins paragraphs that MuPDF
cut into one block per line, and decides the separator between two lines: ``"\\n"`` normally, nothing for a
hyphenated English word or a wrapped Chinese line.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from itertools import groupby

import pymupdf

from rag.ingest.footnote_marks import split_footnote_marks
from rag.text.language import CJK_IDEOGRAPHS

# Words with boxes, whitespace kept out of words, ligatures expanded ("ﬁ" -> "fi") so search works.
TEXT_FLAGS = pymupdf.TEXTFLAGS_WORDS & ~pymupdf.TEXT_PRESERVE_LIGATURES

_HYPHENATED_RE = re.compile(r"[A-Za-z]*[a-z]-")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u200b\ufeff]")
_CJK_PUNCTUATION = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u2018-\u201d"
_CJK_END_RE = re.compile(f"[{CJK_IDEOGRAPHS}{_CJK_PUNCTUATION}]$")
_CJK_START_RE = re.compile(f"^[{CJK_IDEOGRAPHS}]")

# Some PDF fonts map common ideographs to look-alike Kangxi radicals ("⼈" U+2F08 for "人"), which
# breaks search and embeddings; fold them to the unified ideographs.
_RADICALS = {code: unicodedata.normalize("NFKC", chr(code)) for code in range(0x2E80, 0x2FE0)
             if unicodedata.normalize("NFKC", chr(code)) != chr(code)}


@dataclass
class RawWord:
    text: str
    box: tuple[float, float, float, float]
    join: str = " "  # written before this word when it is not the first of its line (OCR'd CJK: "")


@dataclass
class RawLine:
    words: list[RawWord]
    size: float
    bold: bool
    x0: float = 0.0
    y0: float = 0.0
    x1: float = 0.0
    y1: float = 0.0

    def __post_init__(self) -> None:
        boxes = [word.box for word in self.words]
        self.x0, self.y0 = min(box[0] for box in boxes), min(box[1] for box in boxes)
        self.x1, self.y1 = max(box[2] for box in boxes), max(box[3] for box in boxes)

    @property
    def height(self) -> float:
        return self.y1 - self.y0


def read_layout(textpage: pymupdf.TextPage) -> list[list[RawLine]]:
    """Group PyMuPDF's words into blocks of lines, with each line's dominant font size."""
    dict_blocks = textpage.extractDICT()["blocks"]
    blocks: list[list[RawLine]] = []
    for block_no, block_words in groupby(textpage.extractWORDS(), key=lambda w: w[5]):
        lines: list[RawLine] = []
        for line_no, line_words in groupby(block_words, key=lambda w: w[6]):
            cleaned = [RawWord(clean_text(w[4]), (round(w[0], 2), round(w[1], 2), round(w[2], 2),
                                              round(w[3], 2)))
                       for w in line_words]
            cleaned = [word for word in cleaned if word.text]
            if cleaned:
                spans = _spans_of(dict_blocks, block_no, line_no)
                size, bold = _font_of(spans)
                cleaned = split_footnote_marks(cleaned, spans, size)
                lines.append(RawLine(words=cleaned, size=size, bold=bold))
        if lines:
            blocks.append(lines)
    return _merge_wrapped_blocks(blocks)


def _merge_wrapped_blocks(blocks: list[list[RawLine]]) -> list[list[RawLine]]:
    """Rejoin paragraphs that MuPDF split into one block per line (common in Chinese reports).

    A block continues the previous one when the previous line runs to the column's right edge,
    the next line follows directly below (gap under one line height), is not indented, and has the
    same font size.
    """
    all_lines = [line for block in blocks for line in block]
    merged: list[list[RawLine]] = []
    for block in blocks:
        if merged and _continues(merged[-1][-1], block[0], all_lines):
            merged[-1].extend(block)
        else:
            merged.append(list(block))
    return merged


def _continues(last: RawLine, first: RawLine, page_lines: list[RawLine]) -> bool:
    height = last.height
    if abs(last.size - first.size) > 0.5 or not 0 <= first.y0 - last.y1 <= height:
        return False
    if first.x0 > last.x0 + height / 2:  # an indented first line starts a new paragraph
        return False
    column_right = max(line.x1 for line in page_lines
                       if abs(line.size - last.size) <= 0.5 and line.x0 < last.x1 and line.x1 > last.x0)
    return last.x1 >= column_right - 2 * height


def clean_text(text: str) -> str:
    """Drop control characters and fold Kangxi radicals to the ideographs they stand for."""
    return _CONTROL_RE.sub("", text).translate(_RADICALS)


def _spans_of(dict_blocks: list[dict], block_no: int, line_no: int) -> list[dict]:
    try:
        return dict_blocks[block_no]["lines"][line_no]["spans"]
    except (IndexError, KeyError):
        return []


def _font_of(spans: list[dict]) -> tuple[float, bool]:
    """Dominant (most characters) font size of a line's spans, and whether that span is bold."""
    spans = [span for span in spans if span["text"].strip()]
    if not spans:
        return 0.0, False
    main = max(spans, key=lambda span: len(span["text"].strip()))
    bold = bool(main["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in main["font"].lower()
    return round(main["size"], 1), bold


def is_hyphen_break(text: str, following: RawLine) -> bool:
    """``inter-`` at a line end followed by ``national``: a word split by hyphenation."""
    return bool(_HYPHENATED_RE.fullmatch(text)) and following.words[0].text[:1].islower()


def line_join(line: RawLine, following: RawLine, right_edge: float) -> str:
    """The separator after ``line`` inside one block: ``""`` for hyphen breaks and wrapped CJK."""
    last, first = line.words[-1].text, following.words[0].text
    if is_hyphen_break(last, following):
        return ""
    wrapped = line.x1 >= right_edge - 2 * line.height
    if wrapped and _CJK_END_RE.search(last) and _CJK_START_RE.search(first):
        return ""
    return "\n"

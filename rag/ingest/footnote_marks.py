"""Footnote marks set as superscripts right against a word become words of their own.

MuPDF joins a superscript to the word it touches, so a table cell read "\\microa" for "\\micro" with note a, and
"Windows3" for Windows with note 3; neither retriever then found the word. A superscript span (MuPDF's superscript
flag, and smaller type than its line) of one to three letters, digits or note symbols, at the end of a word that ends
in a word of four letters or more, a Chinese character, or a full stop or comma after a letter, is cut off as a word
of its own, and each piece keeps its part of the word's box. Exponents stay where they are: after a figure ("10−6"),
a unit or a variable ("m2", "cm−1", "A2"), as do ordinals ("2nd"). The cost: an exponent after a longer name
("dist2" in a formula) is cut off too. (MuPDF flags a superscript against the text before it on its line, so a
footnote's own mark at the start of its line is not flagged, and stays.)
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Protocol, TypeVar

import pymupdf

from rag.text.language import CJK_IDEOGRAPHS


class _Word(Protocol):  # ``rag.ingest.pdf_layout.RawWord``, which imports this module
    text: str
    box: tuple[float, float, float, float]
    join: str


Word = TypeVar("Word", bound=_Word)

SMALLER = 0.85  # a mark's type is at most this share of its line's
MIN_LETTERS_BEFORE = 4  # "\\micro", "Windows": a word; "m", "cm", "mol": a unit whose superscript is an exponent
SAME_EDGE = 1.0  # points between a span's edge and its word's
_MARK_RE = re.compile(r"^[0-9A-Za-z*†‡§¶]{1,3}$")
_TRAILING_LETTERS_RE = re.compile(r"[A-Za-z]+$")
_CJK_RE = re.compile(f"[{CJK_IDEOGRAPHS}]")


def split_footnote_marks(words: list[Word], spans: list[dict], line_size: float) -> list[Word]:
    """The line's words with each footnote mark glued to one cut off as a word of its own.

    Args:
        words: The line's words, left to right.
        spans: The line's spans as ``extractDICT`` gives them (text, bbox, size, flags).
        line_size: The line's dominant font size.
    """
    # a span can hold several marks ("d e" after "neper"): the first is the one against the word
    marks = [(span["bbox"][0], span["bbox"][2], span["text"].split()[0]) for span in spans
             if span["flags"] & pymupdf.TEXT_FONT_SUPERSCRIPT and span["size"] <= SMALLER * line_size
             and span["text"].strip() and _MARK_RE.match(span["text"].split()[0])]
    if not marks:
        return words
    return [piece for word in words for piece in _split(word, marks)]


def _split(word: Word, marks: list[tuple[float, float, str]]) -> list[Word]:
    x0, y0, x1, y1 = word.box
    text = word.text
    for mark_x0, mark_x1, mark in marks:
        if len(text) <= len(mark):
            continue
        if x0 + SAME_EDGE < mark_x0 < x1 <= mark_x1 + SAME_EDGE and text.endswith(mark):
            base = text[:-len(mark)]
            if _ends_a_word(base):  # the base may end in another mark ("neperde": neper, notes d and e)
                return [*_split(replace(word, text=base, box=(x0, y0, mark_x0, y1)), marks),
                        replace(word, text=mark, box=(mark_x0, y0, x1, y1), join=" ")]
    return [word]


def _ends_a_word(base: str) -> bool:
    """Whether a superscript after ``base`` marks a note rather than an exponent."""
    trailing = _TRAILING_LETTERS_RE.search(base)
    if trailing and len(trailing.group()) >= MIN_LETTERS_BEFORE or _CJK_RE.match(base[-1]):
        return True
    return base[-1] in ".,;:" and len(base) > 1 and base[-2].isalpha()

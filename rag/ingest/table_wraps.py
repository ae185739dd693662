"""Which text lines of a table without drawn row borders continue the row above (a wrapped cell), not a new row.

A table drawn with horizontal rules only, or none at all, gives its rows as text lines; a cell too long for its
column wraps onto the lines under it. ``join_wrapped_rows`` joins each such line to the row it continues, so that a
row's label and its values stay one Markdown row (``rule_tables.text_grid``).
"""

from __future__ import annotations

import re

from rag.ingest.pdf_layout import RawWord
from rag.ingest.table_grid import word_middle
from rag.text.language import CJK_RE

_FIGURE_START_RE = re.compile(r"[-+−–(±~<>]?[$€£¥]?\d")
_DASHES = {"-", "–", "—", "−", "±"}
WORD_SPACE_HEIGHTS = 0.25  # a word space, in line heights

Line = dict[int, list[RawWord]]  # a text line's words by column


def join_wrapped_rows(rows: list[tuple[float, float]], columns: list[tuple[float, float]],
                      words: list[RawWord]) -> list[tuple[float, float]]:
    """Row bands with each line of wrapped text joined to the row it continues (``_continues``)."""
    def cells(band: tuple[float, float]) -> Line:
        found: Line = {}
        for word in words:
            if band[0] <= word_middle(word) < band[1]:
                column = next((c for c, (left, right) in enumerate(columns)
                               if left <= (word.box[0] + word.box[2]) / 2 < right), None)
                if column is not None:
                    found.setdefault(column, []).append(word)
        return found

    joined: list[tuple[float, float]] = []
    first: Line = {}  # the first line of the row being built
    for band in rows:
        line = cells(band)
        if joined and line and _continues(line, first, columns):
            joined[-1] = (joined[-1][0], band[1])
        else:
            joined.append(band)
            first = line
    return joined


def _continues(line: Line, first: Line, columns: list[tuple[float, float]]) -> bool:
    """Whether a line of cells is wrapped text of the row that ``first`` starts.

    It holds no figure and writes only in columns the row's first line filled. A wrapped label starts in
    lower case and leaves some column empty ("Unfamiliar" over "terminology"); a Chinese label broken mid-word
    ("专业型研究" over "生学位") ends shorter than its first line, and every cell beside it ran out of room. Without
    a label, the line continues a row of words where no cell starts a capitalised word, or cells that ran out of
    room, or is a lone cell whose first word would not have fitted after the words above it; a section heading
    ("LMs with proprietary data") is none of these and stays a row.
    """
    if _has_figure(line) or not set(line) <= set(first):
        return False

    def ran_out(c: int) -> bool:
        return _ran_out(first[c], columns[c])

    if 0 in line and 0 in first and CJK_RE.match(line[0][0].text) and CJK_RE.search(first[0][-1].text[-1:]):
        height = first[0][0].box[3] - first[0][0].box[1]
        return _width(line[0]) < _width(first[0]) - height and all(ran_out(c) for c in line)
    if 0 in line:  # beside a wrapped label, only cells that ran out of room wrap too ("chapter | {第," is a row)
        return line[0][0].text[:1].islower() and set(line) < set(first) and all(ran_out(c) for c in line if c)
    in_words = not _has_figure(first) and not any(min(cell, key=lambda word: word.box[0]).text[:1].isupper()
                                                 for cell in line.values())
    # figures set flush right have not run out of room ("32" over the heading "Males"); words with figures among
    # them may have ("{,}\mskip 12mu plus 6mu" over "minus 9mu(vv)"), and a lone cell under words it would not have
    # fitted beside ("{,}\mskip 36mu minus" over "24mu(vv)")
    return in_words or all((ran_out(c) or len(line) == 1 and _would_not_fit(first[c], line[c], columns[c]))
                           and not all(is_figure_word(word.text) for word in first[c]) for c in line)


def _ran_out(cell: list[RawWord], column: tuple[float, float]) -> bool:
    """Whether a cell's text reaches near its column's right edge (a fifth of the column, 20 points at most)."""
    left, right = column
    return max(word.box[2] for word in cell) >= right - min(0.2 * (right - left), 20.0)


def _would_not_fit(cell: list[RawWord], below: list[RawWord], column: tuple[float, float]) -> bool:
    """Whether the first word of the line below would have run past the column's right edge after ``cell``. Asked of
    a lone cell only: beside other cells, a narrow column's words fail it row after row (a column is as wide as its
    widest cell), and polyglossia's list of languages became one row."""
    word = min(below, key=lambda word: word.box[0])
    space = WORD_SPACE_HEIGHTS * (word.box[3] - word.box[1])
    return max(other.box[2] for other in cell) + space + _width([word]) > column[1]


def _width(cell: list[RawWord]) -> float:
    return max(word.box[2] for word in cell) - min(word.box[0] for word in cell)


def _has_figure(line: Line) -> bool:
    return any(is_figure_word(word.text) for cell in line.values() for word in cell)


def is_figure_word(text: str) -> bool:
    """A number, perhaps with a unit of up to three letters ("52.2M", "2x80GB"), a dash or a "±"."""
    text = text.strip("*†‡")
    return text in _DASHES or bool(_FIGURE_START_RE.match(text)) and sum(char.isalpha() for char in text) <= 3

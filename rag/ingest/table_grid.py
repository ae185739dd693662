"""From PyMuPDF's table grid to clean rows of cells, each cell a list of words with their boxes.

PyMuPDF's grid follows the drawings, which are not always the table's logical structure:

* a label that wraps over two lines next to vertically centred numbers is drawn as cell backgrounds
  of different heights, which the grid turns into three rows; rows whose cells reach into the next
  row are one logical row;
* filings set "$" in a cell of its own on some rows only, and a merged cell puts the other rows'
  numbers in that column; a currency sign joins the number on its right (a "%" the number on its
  left), across empty spacer columns,
  and two neighbouring columns that never both hold text in the same row are one column;
* columns with no text at all are dropped;
* a header printed over several rows (Chinese reports' "2019 年 | 2018 年" over "调整前 | 调整后") is
  one header row, each column's headings joined top to bottom, so every part of a split table repeats
  all of it (``split_header``).
"""

from __future__ import annotations

import re
from typing import Optional

from rag.ingest.pdf_layout import RawWord
from rag.text.table_text import is_figure

Box = tuple[float, float, float, float]
Grid = list[list[Optional[Box]]]  # rows of cells; None where a merged cell covers the position
Cell = list[RawWord]

_CURRENCY_RE = re.compile(r"[$€£¥￥]+")
_YEAR_RE = re.compile(r"(19|20)\d\d")
_CUT_NUMBER_RE = re.compile(r"\d,\d{3},\d{0,2}$")  # a thousands group cut short: the number goes on
_CUT_CODE_RE = re.compile(r"\d[-/]\d*$")  # "2019-0", "/12/2": a date or document number goes on
MIN_COLUMN_GAP = 4.0  # points; wider than a space between two words of one cell
RULE_TOUCH = 3.0  # points a caption line's box may reach over the rule it is set against
MAX_HEADING_CHARS = 40  # a column heading is short; a longer cell is text wrapped over rows
# Word spaces in the shared papers are 0.21-0.28 of the line height; their tightest gap between columns is 0.36.
WORD_SPACE_HEIGHTS = 0.33


def place(word: RawWord, bbox: Box, grid: Grid, cells: list[list[Cell]]) -> bool:
    """Put ``word`` into the cell nearest its centre; False when the centre is outside the table."""
    x = (word.box[0] + word.box[2]) / 2
    y = (word.box[1] + word.box[3]) / 2
    if not (bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]):
        return False
    best: tuple[float, int, int] | None = None
    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            if cell is None:
                continue
            distance = max(cell[0] - x, 0.0, x - cell[2]) + max(cell[1] - y, 0.0, y - cell[3])
            if best is None or distance < best[0]:
                best = (distance, r, c)
    if best is None:
        return False
    cells[best[1]][best[2]].append(word)
    return True


def merge_runs(intervals: list[tuple[float, float]], min_gap: float = MIN_COLUMN_GAP) -> list[tuple[float, float]]:
    """Intervals on one axis merged where less than ``min_gap`` apart: the runs of a line's words, a column's spans
    (x), the lines of a cell (y)."""
    runs: list[tuple[float, float]] = []
    for left, right in sorted(intervals):
        if runs and left - runs[-1][1] < min_gap:
            runs[-1] = (runs[-1][0], max(runs[-1][1], right))
        else:
            runs.append((left, right))
    return runs


def text_lines(words: list[RawWord]) -> list[list[RawWord]]:
    """Words grouped into text lines by their vertical centre, top down."""
    lines: list[list[RawWord]] = []
    for word in sorted(words, key=word_middle):
        if lines and abs(word_middle(word) - word_middle(lines[-1][0])) <= (word.box[3] - word.box[1]) / 2:
            lines[-1].append(word)
        else:
            lines.append([word])
    return lines


def word_middle(word: RawWord) -> float:
    return (word.box[1] + word.box[3]) / 2


def centre_in(box: Box, bbox: Box) -> bool:
    """Whether the centre of ``box`` lies inside ``bbox`` (edges included)."""
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]


def clean_rows(grid: Grid, cells: list[list[Cell]], *, drawn_columns: bool = True) -> list[list[Cell]]:
    """Logical rows of non-empty columns, currency signs joined to their numbers; empty rows dropped.

    Columns found from gaps in the text (``drawn_columns`` False: booktabs tables rule only across) can
    cut a phrase that spans them; a drawn column edge is the writer's own.
    """
    width = max((len(row) for row in cells), default=0)
    rows = [[list(cell) for cell in row] + [[] for _ in range(width - len(row))] for row in _group_rows(grid, cells)]
    rows = [row for row in rows if any(row)]
    for row in rows:
        for c in range(len(row) - 1):
            number = _next_filled(row, c, +1)
            if row[c] and number is not None and _is_currency(row[c]) and _joins(row, c, number):
                row[number] = row[c] + row[number]
                row[c] = []
        for c in range(len(row) - 1, 0, -1):  # "3.8 | %": a percent sign in its own cell joins its number
            number = _next_filled(row, c, -1)
            if row[c] and number is not None and _is_percent(row[c]) and _joins(row, c, number):
                row[number] = row[number] + [_glued(word) for word in row[c]]
                row[c] = []
    columns = [c for c in range(width) if any(row[c] for row in rows)]
    rows = [[row[c] for c in columns] for row in rows]
    if not drawn_columns:
        rows = [_join_phrases(row) for row in rows]
    return _merge_complementary_columns(rows)


def continues_number(previous: RawWord, word: RawWord) -> bool:
    """A number or code wrapped onto the next line of its cell: "215,768,64" "3", "2019-0" "56",
    "2019" "/12/2" "1"; never two values stacked ("2019" "2018") or a date ("May 1," "2026")."""
    if word.box[1] < previous.box[3] - 1:
        return False  # same line
    return bool((_CUT_NUMBER_RE.search(previous.text) or _CUT_CODE_RE.search(previous.text)) and word.text[0].isdigit()
                or previous.text[-1].isdigit() and word.text.startswith("/"))


def split_header(rows: list[list[Cell]]) -> tuple[list[Cell], list[list[Cell]]]:
    """(header, body): the first row, joined with the rows under it that are headings too.

    A row continues the header while its cells hold short words or years but no figure, its first (label)
    cell empty or naming the heading row ("Distribution | Poisson | NB", "Object | fm_pois | fm_nbin": a stub
    column of a statistics table); the first row with a figure or a lone label starts the body, and one body
    row always remains. Only a first row with an empty cell (a heading spanning columns, or none over
    the labels) can continue, and only in a table of figures: in a table of text a row with an empty
    first cell is a wrapped cell, not a heading.

    Args:
        rows: The table's clean rows (``clean_rows``), at least two.
    """
    count = 1
    while count < len(rows) - 1 and not all(rows[0]) and _is_heading_row(rows[count]):
        count += 1
    if not any(cell_text(cell) and is_figure(cell_text(cell)) for row in rows[count:] for cell in row[1:]):
        count = 1
    header = [[word for row in rows[:count] for word in row[c]] for c in range(len(rows[0]))]
    return header, rows[count:]


def _is_heading_row(row: list[Cell]) -> bool:
    """Short words or years, no figure; the label cell empty, or naming a heading row of a stub column
    ("Method | ML | adjusted | quasi") that fills more than half the cells beside it (a label over a few
    spanning headings, "Method | Dataset: QQP 140K", heads a group of rows: ``tables._heading_rows``)."""
    texts = [cell_text(cell) for cell in row]
    filled = sum(1 for text in texts[1:] if text)
    if texts[0] and (filled < 2 or filled <= len(texts[1:]) / 2):
        return False
    return any(texts) and all(
        not text or (len(text) <= MAX_HEADING_CHARS and (not is_figure(text) or _YEAR_RE.fullmatch(text)))
        for text in texts)


def cell_text(cell: Cell) -> str:
    return "".join(word.text for word in cell)


def _group_rows(grid: Grid, cells: list[list[Cell]]) -> list[list[Cell]]:
    """Join grid rows that a tall cell ties together, when their values do not collide.

    Rows are tied while a cell reaches below the next row's top. A tied group is one logical row when
    no column but the first has text in two of its rows (a wrapped label beside numbers drawn at other
    heights), or when some column but the first has words in two of its rows (a row of text wrapped
    in its cells); a label spanning several rows of values keeps those rows apart.
    """
    groups: list[list[int]] = []
    reach = float("-inf")
    for index, row_boxes in enumerate(grid):
        boxes = [box for box in row_boxes if box is not None]
        top = min((box[1] for box in boxes), default=float("inf"))
        bottom = max((box[3] for box in boxes), default=reach)
        if groups and top < reach - 1:
            groups[-1].append(index)
            reach = max(reach, bottom)
        else:
            groups.append([index])
            reach = bottom
    rows: list[list[Cell]] = []
    for group in groups:
        width = len(cells[group[0]])
        collide = any(sum(1 for index in group if cells[index][c]) > 1 for c in range(1, width))
        wrapped = any(sum(1 for index in group if cells[index][c] and not is_figure(cell_text(cells[index][c]))) > 1
                      for c in range(1, width))
        if len(group) > 1 and (wrapped or not collide):
            rows.append([[word for index in group for word in cells[index][c]] for c in range(width)])
        else:
            rows.extend([list(cell) for cell in cells[index]] for index in group)
    return rows


def _join_phrases(row: list[Cell]) -> list[Cell]:
    """A line of text cut by a column edge is one cell: a group heading centred over the columns ("Trainable
    rewriter" above its rows) or a label running into the next column gets split at the edge, but the gap
    between its halves is a word space, narrower than any gap between columns."""
    row = [list(cell) for cell in row]
    c = 0
    while c < len(row):
        following = _next_filled(row, c, +1) if row[c] else None
        if following is not None and _one_phrase(row[c], row[following]):
            row[c] = row[c] + row[following]
            row[following] = []
        else:
            c += 1
    return row


def _one_phrase(left: Cell, right: Cell) -> bool:
    if is_figure(cell_text(left)) or is_figure(cell_text(right)):
        return False
    last = max(left, key=lambda word: word.box[2])
    first = min(right, key=lambda word: word.box[0])
    height = min(last.box[3] - last.box[1], first.box[3] - first.box[1])
    same_line = min(last.box[3], first.box[3]) - max(last.box[1], first.box[1]) > height / 2
    return same_line and 0 <= first.box[0] - last.box[2] < WORD_SPACE_HEIGHTS * height


def _merge_complementary_columns(rows: list[list[Cell]]) -> list[list[Cell]]:
    if not rows:
        return rows
    c = 0
    while c < len(rows[0]) - 1:
        if all(not (row[c] and row[c + 1]) for row in rows):
            rows = [row[:c] + [row[c] + row[c + 1]] + row[c + 2:] for row in rows]
        else:
            c += 1
    return rows


def _next_filled(row: list[Cell], c: int, step: int) -> int | None:
    """The nearest column from ``c`` in direction ``step`` that holds text (filings leave empty
    spacer columns between a number and its "%")."""
    c += step
    while 0 <= c < len(row) and not row[c]:
        c += step
    return c if 0 <= c < len(row) else None


def _joins(row: list[Cell], sign: int, number: int) -> bool:
    """A sign joins its neighbour, or a figure across empty columns."""
    return abs(sign - number) == 1 or is_figure(cell_text(row[number]))


def _is_percent(cell: Cell) -> bool:
    return "".join(word.text for word in cell) in ("%", "％")


def _glued(word: RawWord) -> RawWord:
    """``word`` written right after the previous one, without a space ("3.8%")."""
    return RawWord(word.text, word.box, "")


def _is_currency(cell: Cell) -> bool:
    return bool(_CURRENCY_RE.fullmatch("".join(word.text for word in cell)))

"""Tables with a "Table N" caption and nothing drawn to find them by.

Older journals and R vignettes set a table as aligned text with one rule under the header or none at all
(survival's "Table 1: Comparison of the age distributions"), and some PDFs draw their rules as images, so
neither ``page.find_tables()`` nor the rule stacks of ``rag.ingest.rule_tables`` see them. The caption
does: from a caption line, the text lines right over it (a caption below its table) or right under it
(a caption above, after the rest of its paragraph) are walked away from it while they look like rows — two
or more cells apart by more than a word space, or a short heading line over a block ("Females", "GPT2
Baselines") — and stop at running text, a wide gap or another caption. Three or more rows of cells make a
table, whose grid comes from the same gaps as a booktabs table's (``rule_tables.text_grid``).

Running text ends the walk: a line that starts with a sentence as wide as ``PROSE_SHARE`` of the column, or two
sentences side by side — a page in two columns puts two lines of prose on one baseline with the gutter between
them, which would otherwise look like two cells. On such a page (more sentences on each side of the middle than
across it) a caption off the middle looks only at its own column.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

from rag.ingest.pdf_layout import RawWord
from rag.ingest.rule_tables import text_grid
from rag.ingest.table_caption import labelled_elsewhere
from rag.ingest.table_grid import Box, Grid, centre_in, text_lines, word_middle
from rag.text.language import CJK_RE
from rag.text.table_captions import CAPTION_LABEL_RE

CELL_GAP_HEIGHTS = 0.9  # a gap between words this many line heights wide separates two cells of a row
MAX_LINE_GAP_HEIGHTS = 2.5  # a blank line between blocks ("Females" … "Males") stays in the table
MAX_CAPTION_GAP_HEIGHTS = 3.0  # between the caption and the table's nearest line
MAX_CAPTION_LINES = 6  # a caption paragraph over its table runs on for at most this many lines
PROSE_SHARE = 0.4  # of the caption's column: a cell this wide is running text
SIDE_BY_SIDE_SHARE = 0.3  # two sentences this wide on one line: two columns of running text
SENTENCE_WORDS, SENTENCE_CJK_CHARS = 6, 15
MIN_ROWS = 3  # lines of two or more cells
SET_OFF_GAP_HEIGHTS = 1.5  # a blank this high, then a line starting left of every row (three or more): past the table
MIN_ROW_SHARE = 0.5  # of the lines in the band
SAME_EDGE = 3.0  # points: a caption's wrapped line starts where it does
CAPTION_SPACE_HEIGHTS = 3.0  # between "Table 1.1" and the caption's words on its line
CENTRED = 0.12  # of the page width: a caption centred this close to the middle may head a table across the page


def caption_tables(words: list[RawWord], captions: Sequence[Box], *, taken: list[Box],
                   page_width: float) -> list[tuple[Box, Grid]]:
    """(bbox, grid) of each table of aligned text right over or under a caption line, outside ``taken``."""
    if not captions:
        return []  # most pages: spare them the two-column scan over every word
    tables: list[tuple[Box, Grid]] = []
    two_columns = _in_two_columns(words, page_width)
    for label in captions:
        caption = _caption_extent(label, words)
        left, right = _column(caption, page_width) if two_columns else (0.0, page_width)
        occupied = [*taken, *(table[0] for table in tables)]
        free = [word for word in words if left <= (word.box[0] + word.box[2]) / 2 <= right
                and not centre_in(word.box, caption) and not any(centre_in(word.box, box) for box in occupied)]
        lines = text_lines(free)
        if _beside_table(label, caption, lines, occupied, captions):
            continue  # the caption of a table found already
        above = [line for line in lines if _bottom(line) <= caption[1] + 1][::-1]
        below = [line for line in lines if _top(line) >= caption[3] - 1]
        below, edge = _after_caption(below, caption, right - left)
        for band in (_band(above, caption[1], right - left, upward=True),
                     _band(below, edge, right - left, upward=False)):
            if not band:
                continue
            band_words = [word for line in band for word in line]
            bbox = (min(word.box[0] for word in band_words) - 1, min(_top(line) for line in band) - 1,
                    max(word.box[2] for word in band_words) + 1, max(_bottom(line) for line in band) + 1)
            grid = text_grid(band_words, bbox, header_bottom=bbox[1], need_figures=False)
            if grid:
                tables.append((bbox, grid))
                break
    return tables


def _caption_extent(label: Box, words: list[RawWord]) -> Box:
    """The caption's first line: the label's line and the words right of it on the same baseline (PyMuPDF may
    read "Table 1.1" and the caption text after a wide space as two lines)."""
    x0, y0, x1, y1 = label
    if len([word for word in words if centre_in(word.box, label)]) > 2:
        return label  # the caption's text is on the label's line already
    for word in sorted(words, key=lambda word: word.box[0]):
        height = word.box[3] - word.box[1]
        if y0 <= word_middle(word) <= y1 and x1 - 1 <= word.box[0] <= x1 + CAPTION_SPACE_HEIGHTS * height:
            x1 = max(x1, word.box[2])
    return x0, y0, x1, y1


def _beside_table(label: Box, caption: Box, lines: list[list[RawWord]], taken: list[Box],
                  captions: Sequence[Box]) -> bool:
    """Whether a table found already sits right over or under the caption (``label``'s line, as listed in
    ``captions``, and the words beside it) and has no other label (SIunits sets "Table 2: …" a few lines under
    Table 1, whose label is over it)."""
    height = median([_height(line) for line in lines] or [caption[3] - caption[1]])
    return any(box[0] < caption[2] and caption[0] < box[2]
               and (0 <= caption[1] - box[3] <= MAX_CAPTION_GAP_HEIGHTS * height
                    or 0 <= box[1] - caption[3] <= MAX_CAPTION_GAP_HEIGHTS * height)
               and not labelled_elsewhere(box, label, captions) for box in taken)


def _in_two_columns(words: list[RawWord], page_width: float) -> bool:
    """Whether the page sets its running text in two columns: more lines of sentences on each side of the middle
    than across it."""
    middle = page_width / 2
    left = right = across = 0
    for line in text_lines(words):
        for cell in _cells(line):
            if _is_sentence(" ".join(word.text for word in cell)):
                x0, x1 = cell[0].box[0], cell[-1].box[2]
                left, right, across = left + (x1 < middle), right + (x0 > middle), across + (x0 < middle < x1)
    return min(left, right) >= MIN_ROWS and across < min(left, right)


def _column(caption: Box, page_width: float) -> tuple[float, float]:
    """The x-range a caption's table may take: the whole page for a caption centred on it, else its half."""
    centre = (caption[0] + caption[2]) / 2
    if abs(centre - page_width / 2) <= CENTRED * page_width or caption[2] - caption[0] > page_width / 2:
        return 0.0, page_width
    return (0.0, page_width / 2) if centre < page_width / 2 else (page_width / 2, page_width)


def _after_caption(lines: list[list[RawWord]], caption: Box,
                   width: float) -> tuple[list[list[RawWord]], float]:
    """The lines under a caption line past the rest of its paragraph (lines close under it that are running text
    or one cell flush with the caption's left edge), and the paragraph's bottom."""
    edge = caption[3]
    for skipped, line in enumerate(lines[:MAX_CAPTION_LINES]):
        flush = len(_cells(line)) == 1 and abs(min(word.box[0] for word in line) - caption[0]) <= SAME_EDGE
        if not (_is_prose(line, width) or flush) or _top(line) - edge > _height(line):
            return lines[skipped:], edge
        edge = _bottom(line)
    return lines[MAX_CAPTION_LINES:], edge


def _band(lines: list[list[RawWord]], edge: float, width: float, *, upward: bool) -> list[list[RawWord]]:
    """The lines that look like a table's rows, walked from ``edge`` away from the caption; [] when too few."""
    band: list[list[RawWord]] = []
    for line in lines:
        gap = (edge - _bottom(line)) if upward else (_top(line) - edge)
        height = median(_height(row) for row in band) if band else _height(line)  # a heading's larger type is no row
        limit = (MAX_LINE_GAP_HEIGHTS if band else MAX_CAPTION_GAP_HEIGHTS) * height
        text = " ".join(word.text for word in sorted(line, key=lambda word: word.box[0]))
        if gap > limit or _is_prose(line, width) or CAPTION_LABEL_RE.match(text) or _starts_figure(text):
            break
        if (len(band) >= MIN_ROWS and gap > SET_OFF_GAP_HEIGHTS * height
                and _left(line) < min(map(_left, band)) - height):
            break  # a heading set out left of the table after a blank line ("3.2.2 The 'degree Celsius'")
        band.append(line)
        edge = _top(line) if upward else _bottom(line)
    rows = [i for i, line in enumerate(band) if len(_cells(line)) >= 2]
    if len(rows) < MIN_ROWS or len(rows) < MIN_ROW_SHARE * (rows[-1] + 1):
        return []
    # lines of one cell past the last row: close by, wrapped cells or rows of labels only; set apart, the text beyond
    end = rows[-1] + 1
    while end < len(band) and _gap(band[end - 1], band[end]) <= _height(band[end]):
        end += 1
    return band[:end]


def _gap(a: list[RawWord], b: list[RawWord]) -> float:
    return max(_top(b) - _bottom(a), _top(a) - _bottom(b))


def _cells(line: list[RawWord]) -> list[list[RawWord]]:
    """A line's words split where the gap between two words is wider than a word space."""
    gap = CELL_GAP_HEIGHTS * _height(line)
    cells: list[list[RawWord]] = []
    for word in sorted(line, key=lambda word: word.box[0]):
        if cells and word.box[0] - cells[-1][-1].box[2] < gap:
            cells[-1].append(word)
        else:
            cells.append([word])
    return cells


def _is_prose(line: list[RawWord], width: float) -> bool:
    """A line that starts with a sentence as wide as ``PROSE_SHARE`` of the column, or two sentences side by side (a
    page in two columns). A wide sentence after a short first cell is a table's column of descriptions."""
    cells = [(cell[-1].box[2] - cell[0].box[0], " ".join(word.text for word in cell)) for cell in _cells(line)]
    sentences = [cell_width for cell_width, text in cells if _is_sentence(text)]
    first_width, first_text = cells[0]
    return (first_width >= PROSE_SHARE * width and _is_sentence(first_text)) or sum(
        1 for cell_width in sentences if cell_width >= SIDE_BY_SIDE_SHARE * width) >= 2


def _is_sentence(text: str) -> bool:
    """Words enough for running text: six or more, or fifteen Chinese characters ("Papers w/ publisher abstract"
    is a label)."""
    return len(text.split()) >= SENTENCE_WORDS or len(CJK_RE.findall(text)) >= SENTENCE_CJK_CHARS


def _starts_figure(text: str) -> bool:
    return text.startswith(("Figure", "Fig.", "FIGURE", "图"))


def _height(line: list[RawWord]) -> float:
    return median(word.box[3] - word.box[1] for word in line)


def _left(line: list[RawWord]) -> float:
    return min(word.box[0] for word in line)


def _top(line: list[RawWord]) -> float:
    return min(word.box[1] for word in line)


def _bottom(line: list[RawWord]) -> float:
    return max(word.box[3] for word in line)

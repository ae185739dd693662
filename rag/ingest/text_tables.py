"""Tables set as aligned text with no lines at all, found from their "Table N" caption.

Some papers (AAAI's style among them) print results as columns of text without ruling lines or rules,
which neither ``page.find_tables()`` nor ``rag.ingest.rule_tables`` sees; their cells then run through
the page text one per line, far from their row label. A caption line ("Table 4: …", "表 2 …") anchors
the search: the visual lines right above it (a caption set under its table) or right below it (one set
over it, after the caption's own lines), in the caption's column of the page, belong to the table while
each is split into two or more runs of words by gaps wider than any space (``MIN_CELL_GAP``) or is a
short heading ("GPT2 Baselines"). A line of running text, a wide vertical gap or another caption ends
it. As for rule tables, only tables of figures are taken (a column right of the labels holds mostly
numbers) with ``MIN_CELL_ROWS`` rows of cells at least, and the grid's columns and rows are found the
same way (``rag.ingest.rule_tables``).
"""

from __future__ import annotations

from rag.ingest.pdf_layout import RawLine, RawWord
from rag.ingest.rule_tables import column_spans, has_figure_column, join_wrapped_rows, row_bands, text_lines
from rag.ingest.table_grid import Box, Grid
from rag.text.table_text import CAPTION_LABEL_RE

MIN_CELL_GAP = 8.0  # points between two cells of a row; a justified space stays well below
MAX_ROW_GAP = 2.0  # line heights of blank space between two rows of one table
MAX_HEADING_SHARE = 0.5  # of the column's width: a one-run line wider than this is running text
MIN_CELL_ROWS = 3  # lines of two or more cells
MAX_CAPTION_LINES = 4  # a caption set over its table is skipped over, up to this many lines
COLUMN_SLACK = 10.0  # points a one-column caption may reach past the page's middle


def caption_tables(lines: list[RawLine], page_width: float, *, taken: list[Box]) -> list[tuple[Box, Grid]]:
    """(bbox, grid) of each table of figures next to a "Table N" caption, outside the boxes in ``taken``.

    Args:
        lines: The page's text lines.
        page_width: The page's width, to tell which column of a two-column page a caption sits in.
        taken: Tables already found on the page.
    """
    captions = [line for line in lines if CAPTION_LABEL_RE.match(_text(line.words))]
    if not captions:
        return []
    words = [word for line in lines for word in line.words]
    tables: list[tuple[Box, Grid]] = []
    for caption in captions:
        left, right = _column(caption, page_width)
        visual = [sorted(line, key=lambda word: word.box[0])
                  for line in text_lines([word for word in words if left <= _centre_x(word) <= right])]
        at = next((i for i, line in enumerate(visual) if caption.words[0] in line), None)
        if at is None:
            continue
        for region in (_walk(visual, at, -1, right - left), _walk(visual, at, +1, right - left)):
            table = _table(region, taken + [box for box, _ in tables])
            if table is not None:
                tables.append(table)
                break
    return tables


def _walk(visual: list[list[RawWord]], at: int, step: int, width: float) -> list[list[RawWord]]:
    """The table lines next to the caption at ``visual[at]``, going up (-1) or down (+1)."""
    index = at + step
    if step > 0:  # a caption over its table: its own further lines come first
        skipped = 0
        while 0 <= index < len(visual) and len(_runs(visual[index])) == 1 and skipped < MAX_CAPTION_LINES:
            index, skipped = index + 1, skipped + 1
    region: list[list[RawWord]] = []
    previous = visual[index - step]  # the caption, or its last line skipped over
    while 0 <= index < len(visual):
        line = visual[index]
        if CAPTION_LABEL_RE.match(_text(line)) or _gap(previous, line) > MAX_ROW_GAP * _height(line):
            break
        runs = _runs(line)
        if len(runs) == 1 and runs[0][1] - runs[0][0] > MAX_HEADING_SHARE * width:
            break  # running text
        region.append(line)
        previous, index = line, index + step
    return region if step > 0 else region[::-1]


def _table(region: list[list[RawWord]], taken: list[Box]) -> tuple[Box, Grid] | None:
    """The region's grid when it is a table of figures clear of ``taken``, else None."""
    if sum(1 for line in region if len(_runs(line)) >= 2) < MIN_CELL_ROWS:
        return None
    body = [word for line in region for word in line]
    bbox = (min(w.box[0] for w in body), min(w.box[1] for w in body),
            max(w.box[2] for w in body), max(w.box[3] for w in body))
    if any(bbox[0] < box[2] and box[0] < bbox[2] and bbox[1] < box[3] and box[1] < bbox[3] for box in taken):
        return None
    columns = column_spans(body, bbox[0], bbox[2])
    if len(columns) < 2 or not has_figure_column(body, columns):
        return None
    rows = join_wrapped_rows(row_bands(body, bbox[1], bbox[3]), columns, body)
    return bbox, [[(left, top, right, bottom) for left, right in columns] for top, bottom in rows]


def _column(caption: RawLine, page_width: float) -> tuple[float, float]:
    """The x-range of the page column the caption sits in (the whole page for a caption across both)."""
    middle = page_width / 2
    if caption.x1 <= middle + COLUMN_SLACK:
        return 0.0, middle
    if caption.x0 >= middle - COLUMN_SLACK:
        return middle, page_width
    return 0.0, page_width


def _runs(line: list[RawWord]) -> list[tuple[float, float]]:
    """The line's runs of words, split where the gap between two words exceeds ``MIN_CELL_GAP``."""
    runs: list[tuple[float, float]] = []
    for word in line:
        if runs and word.box[0] - runs[-1][1] <= MIN_CELL_GAP:
            runs[-1] = (runs[-1][0], max(runs[-1][1], word.box[2]))
        else:
            runs.append((word.box[0], word.box[2]))
    return runs


def _gap(other: list[RawWord], line: list[RawWord]) -> float:
    """Blank space between two visual lines, whichever is above."""
    top_a, bottom_a = min(w.box[1] for w in other), max(w.box[3] for w in other)
    top_b, bottom_b = min(w.box[1] for w in line), max(w.box[3] for w in line)
    return max(top_b - bottom_a, top_a - bottom_b, 0.0)


def _height(line: list[RawWord]) -> float:
    return max(max(w.box[3] - w.box[1] for w in line), 1.0)


def _text(words: list[RawWord]) -> str:
    return " ".join(word.text for word in words)


def _centre_x(word: RawWord) -> float:
    return (word.box[0] + word.box[2]) / 2

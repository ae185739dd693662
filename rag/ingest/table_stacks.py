"""Journal tables ruled only between blocks: ``find_tables`` returns a few tall cells that stack rows and columns.

A table ruled only under its header and between its blocks (pscl's Table 2, CiteSee's results) comes out of
``find_tables`` as a grid of a few tall cells: one holds every label of a block, the next every value of four
models. ``split_stacked_rows`` cuts such a drawn row at each line of its label; ``split_stacked_columns`` then
cuts a drawn column at the gaps its values leave in every row, as the rule-table detector finds columns.
Both leave ordinary grids alone: there a drawn row is a table row and a drawn column a table column.

A table ruled between its columns only, its rows set apart by blank lines (plain TeX's ruled tables: cnbook's
mushrooms), comes out as one drawn row of tall cells; ``split_spaced_rows`` cuts it at those blank lines.
"""

from __future__ import annotations

from statistics import median_high

from rag.ingest.pdf_layout import RawWord
from rag.ingest.table_grid import Box, Cell, Grid, cell_text, merge_runs, text_lines, word_middle
from rag.text.table_text import is_figure

MIN_SPACED_ROWS = 3  # a header and two rows, each with text in two cells or more
SPACED_ROW_GAP = 0.4  # line heights: a band this tall (and twice the cells' line gap) with no text separates rows
FILLED_LINE_GAP = 15.0  # points from a cell's right edge: a line of text that reaches it was wrapped there


def unstack(grid: Grid, cells: list[list[Cell]]) -> tuple[Grid, list[list[Cell]]]:
    """The grid with stacked rows split, then, in a table that had them, stacked columns; a grid of one drawn row
    is split at its blank lines only (else it stays one row, and is no table)."""
    if len(grid) == 1:  # rows set apart are one row each, however many lines their labels take
        return split_spaced_rows(grid, cells)
    rows_grid, rows_cells = split_stacked_rows(grid, cells)
    if len(rows_grid) == len(grid):
        return grid, cells
    return split_stacked_columns(rows_grid, rows_cells)


def split_stacked_rows(grid: Grid, cells: list[list[Cell]]) -> tuple[Grid, list[list[Cell]]]:
    """Drawn rows that stack several rows of the table, split at each line of their labels.

    Tables ruled only between groups (journal tables: a rule under the header and one per block) come out of
    ``find_tables`` as a few tall cells, each holding a column of values; a label line with a value beside it
    on the same line, twice or more in one drawn row, means the row stacks table rows. Each line of the label
    starts a row that keeps the lines below it (a standard error under its estimate, wrapped text), so a
    label wrapped beside one value stays one row.
    """
    new_grid: Grid = []
    new_cells: list[list[Cell]] = []
    for boxes, row in zip(grid, cells):
        starts = _stacked_starts(row, boxes[0][2]) if boxes and boxes[0] is not None else []
        if len(starts) < 2:
            new_grid.append(boxes)
            new_cells.append(row)
            continue
        top = min(box[1] for box in boxes if box is not None)
        bottom = max(box[3] for box in boxes if box is not None)
        cut_grid, cut_cells = _cut_row(boxes, row, [top, *starts[1:], bottom])
        new_grid += cut_grid
        new_cells += cut_cells
    return new_grid, new_cells


def _cut_row(boxes: list[Box | None], row: list[Cell], edges: list[float]) -> tuple[Grid, list[list[Cell]]]:
    """One drawn row cut into a row per band between consecutive ``edges``, each word in the band of its middle."""
    bands = list(zip(edges, edges[1:]))
    grid: Grid = [[None if box is None else (box[0], upper, box[2], lower) for box in boxes] for upper, lower in bands]
    cells = [[[word for word in cell if upper <= word_middle(word) < lower] for cell in row] for upper, lower in bands]
    return grid, cells


def split_spaced_rows(grid: Grid, cells: list[list[Cell]]) -> tuple[Grid, list[list[Cell]]]:
    """One drawn row cut where a band across every cell holds no text and is taller than ``SPACED_ROW_GAP`` line
    heights and twice the usual gap between lines: the blank space between the rows of a table ruled only between
    its columns. Kept only when that gives ``MIN_SPACED_ROWS`` rows or more, each filling two cells or more."""
    [boxes], [row] = grid, cells
    words = [word for cell in row for word in cell]
    if not words or any(box is None for box in boxes):
        return grid, cells
    height = median_high(_height(word) for word in words)
    lines = merge_runs([(word.box[1], word.box[3]) for word in words], min_gap=0.01)
    gaps = [lower[0] - upper[1] for upper, lower in zip(lines, lines[1:])]
    if not gaps:
        return grid, cells
    leading = median_high(gaps)  # most gaps are between the lines of one cell
    bands = merge_runs(lines, min_gap=max(SPACED_ROW_GAP * height, 2 * leading))
    if len(bands) < 2:
        return grid, cells
    edges = [boxes[0][1], *((upper[1] + lower[0]) / 2 for upper, lower in zip(bands, bands[1:])), boxes[0][3]]
    new_grid, new_cells = _cut_row(boxes, row, edges)
    if len(new_cells) < MIN_SPACED_ROWS or any(sum(1 for cell in new_row if cell) < 2 for new_row in new_cells):
        return grid, cells  # two framed boxes side by side, a figure's labels: not rows of a table
    return new_grid, new_cells


def _stacked_starts(row: list[Cell], label_right: float) -> list[float]:
    """Tops of the label's lines when two or more of them, in words, have a value on the same line, most
    value cells hold several lines too, and the label is not a paragraph.

    Lines ending in a word at the cell's right edge are text wrapped beside another paragraph (an audit
    matter beside its response) or a long label wrapped in a narrow column; a row whose value cells are mostly
    one line is one row with a few wrapped cells; labels that are figures are a chart's axis.
    """
    labels = text_lines(row[0])
    value_lines = [text_lines(cell) for cell in row[1:]]
    aligned = [line for line in labels
               if not is_figure(cell_text(line))
               and any(abs(word_middle(other[0]) - word_middle(line[0])) < _height(line[0]) / 2
                       for lines in value_lines for other in lines)]
    wrapped = [line for line in labels[:-1] if label_right - max(word.box[2] for word in line) < FILLED_LINE_GAP
               and not is_figure(max(line, key=lambda word: word.box[2]).text)]
    values = [lines for lines in value_lines if lines]
    stacked = [lines for lines in values if len(lines) >= 2]
    if len(aligned) < 2 or 2 * len(wrapped) > len(labels) - 1 or 2 * len(stacked) <= len(values):
        return []
    return [min(word.box[1] for word in line) - 0.5 for line in labels]


def split_stacked_columns(grid: Grid, cells: list[list[Cell]]) -> tuple[Grid, list[list[Cell]]]:
    """Drawn columns cut at the gaps their words leave in every row.

    Only lines with two or more runs of words, and more than half as many as the column's fullest line,
    place the gaps: a heading over several models ("GLM") or a one-value line would bridge them.
    """
    width = max((len(row) for row in grid), default=0)
    edges: dict[int, list[float]] = {}
    for c in range(width):
        lines = [_runs(line) for row in cells if c < len(row) for line in text_lines(row[c])]
        fullest = max((len(runs) for runs in lines), default=0)
        spans = merge_runs([run for runs in lines if len(runs) >= 2 and len(runs) > fullest / 2 for run in runs])
        if len(spans) >= 2:
            edges[c] = [(left[1] + right[0]) / 2 for left, right in zip(spans, spans[1:])]
    if not edges:
        return grid, cells
    new_grid: Grid = []
    new_cells: list[list[Cell]] = []
    for boxes, row in zip(grid, cells):
        new_boxes: list[Box | None] = []
        new_row: list[Cell] = []
        for c, (box, cell) in enumerate(zip(boxes, row)):
            cuts = edges.get(c, [])
            bounds = [float("-inf"), *cuts, float("inf")]
            for left, right in zip(bounds, bounds[1:]):
                new_boxes.append(None if box is None else (max(box[0], left), box[1], min(box[2], right), box[3]))
                new_row.append([word for word in cell if left <= (word.box[0] + word.box[2]) / 2 < right])
        new_grid.append(new_boxes)
        new_cells.append(new_row)
    return new_grid, new_cells


def _runs(line: Cell) -> list[tuple[float, float]]:
    return merge_runs([(word.box[0], word.box[2]) for word in line])


def _height(word: RawWord) -> float:
    return word.box[3] - word.box[1]

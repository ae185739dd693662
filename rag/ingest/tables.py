"""Tables found by PyMuPDF become Markdown blocks whose every cell word keeps its box.

``find_tables`` takes the page's text lines (``RawLine`` blocks), asks ``page.find_tables()`` where
the tables are (``rag.ingest.rule_tables`` for tables ruled only across, ``rag.ingest.caption_tables`` for
aligned text beside a "Table N" caption, ``rag.ingest.printout_tables`` for a program's printed output, captioned
by the command that printed it, ``rag.ingest.aligned_lists`` for lists of terms without rules), moves every word
inside a table into its cell and its caption lines (``rag.ingest.table_caption``) into the table, and returns the
page as a list of items: text blocks (without the table's words, so the running text never repeats a cell) and
``TableBlock``s, each before the first text block below it. Column headings printed above the ruled part ("2021
2022") become the header row; ``rag.ingest.table_grid`` straightens out the grid's quirks.

``TableBlock.parts`` lays a table out as Markdown text pieces, each cell word paired with its box, so
the page text can be built with exact word offsets: a citation of one row highlights that row. A table
longer than the chunk size is split into parts that each repeat the caption and the header row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import pymupdf

from rag.ingest.aligned_lists import aligned_list_tables
from rag.ingest.caption_tables import caption_tables
from rag.ingest.header_rule_tables import header_rule_tables
from rag.ingest.pdf_layout import RawLine, RawWord
from rag.ingest.printout_tables import printout_tables
from rag.ingest.rule_tables import has_ruling, mid_rule_tables, rule_tables
from rag.ingest.table_caption import header_from_caption, line_text, take_caption, without_lines
from rag.ingest.table_grid import Box, Cell, Grid, centre_in, clean_rows, continues_number, place, split_header
from rag.ingest.table_stacks import unstack
from rag.text.language import CJK_RE, count_tokens
from rag.text.table_captions import is_caption_label
from rag.text.table_text import is_figure

Piece = tuple[str, Union[RawWord, None]]  # text written into the page, and the word it is (None: markup)


@dataclass
class TableBlock:
    bbox: Box
    caption: list[RawLine]
    header: list[Cell]
    rows: list[list[Cell]]

    def parts(self, max_tokens: int) -> list[tuple[list[Piece], int]]:
        """Markdown parts of at most ``max_tokens`` (one body row at least): (text pieces, body rows). A part that
        starts inside a group of rows repeats its heading row ("GPT2 Baselines", "流动资产："): they need it."""
        caption = _caption_pieces(self.caption)
        header = _row_pieces(self.header) + [("\n|" + "|".join(" --- " for _ in self.header) + "|", None)]
        overhead = count_tokens(" ".join(text for text, _ in caption + header))
        headings = _heading_rows(self.rows)
        parts: list[tuple[list[Piece], int]] = []
        current, rows, used = [], 0, overhead
        spanning, group = [], []  # the last heading with text across the columns, and the last label-only one since
        for number, row in enumerate(self.rows):
            pieces = [("\n", None)] + _row_pieces(row)
            size = count_tokens(" ".join(text for text, _ in pieces))
            if rows and used + size > max_tokens:
                parts.append((caption + header + current, rows))
                current = [] if number in headings else spanning + group
                rows, used = 0, overhead + count_tokens(" ".join(text for text, _ in current))
            if number in headings:
                spanning, group = (pieces, []) if any(row[1:]) else (spanning, pieces)
            current += pieces
            rows += 1
            used += size
        parts.append((caption + header + current, rows))
        return parts


Item = Union[list[RawLine], TableBlock]


def find_tables(pdf_page: pymupdf.Page, blocks: list[list[RawLine]]) -> list[Item]:
    """The page's text blocks with its tables cut out of them and placed as ``TableBlock``s.

    Raises:
        Exception: whatever PyMuPDF raises on a broken page; the caller keeps the page as plain text.
    """
    items: list[Item] = [list(block) for block in blocks]
    drawings = pdf_page.get_cdrawings()  # read once: both ways of finding tables look at the rules
    found = []
    if has_ruling(drawings):
        pymupdf.no_recommend_layout()  # PyMuPDF would print an advertisement to stdout
        found = pdf_page.find_tables().tables
    found_boxes = []
    for table in found:
        bbox = tuple(table.bbox)
        grid = [[tuple(cell) if cell is not None else None for cell in row.cells] for row in table.rows]
        cut = _cut_out(items, bbox, grid, drawn_columns=True, others=[])
        # a shaded band behind every other row of a striped table comes back as a one-row "table" each; one drawn
        # row is a table only when its blank lines split it into rows (``table_stacks.split_spaced_rows``)
        if table.row_count >= 2 or cut is not items:
            found_boxes.append(bbox)
        items = cut
    lines = [line for block in blocks for line in block]
    words = [word for line in lines for word in line.words]
    captions = [(line.x0, line.y0, line.x1, line.y1) for line in lines if is_caption_label(line_text(line))]
    ruled = rule_tables(drawings, words, taken=found_boxes, captions=captions)
    taken = found_boxes + [bbox for bbox, _ in ruled]
    drawn = ruled + caption_tables(words, captions, taken=taken, page_width=pdf_page.rect.width)
    drawn += mid_rule_tables(drawings, words, taken=found_boxes + [bbox for bbox, _ in drawn], captions=captions)
    drawn += header_rule_tables(drawings, words, taken=found_boxes + [bbox for bbox, _ in drawn])
    printed = printout_tables(words, taken=found_boxes + [bbox for bbox, _ in drawn])
    drawn += aligned_list_tables(words, taken=found_boxes + [bbox for bbox, _ in drawn] + [p.bbox for p in printed])
    for bbox, grid in drawn:
        items = _cut_out(items, bbox, grid, drawn_columns=False, others=[box for box, _ in drawn if box != bbox])
    for printout in printed:
        items = _cut_out(items, printout.bbox, printout.grid, drawn_columns=False, others=[],
                         caption_given=True, caption=printout.caption)
    return items


def _cut_out(items: list[Item], bbox: Box, grid: Grid, *, drawn_columns: bool, others: list[Box],
             caption_given: bool = False, caption: Box | None = None) -> list[Item]:
    """Move the words inside ``bbox`` into a ``TableBlock`` placed among ``items`` by position; a caption label
    nearer one of the ``others`` (the page's other tables) is theirs. With ``caption_given`` (a printout), the lines
    inside the ``caption`` box (its command) are the caption, and no caption is looked for when there is none."""
    cells: list[list[Cell]] = [[[] for _ in row] for row in grid]
    kept: list[Item] = []
    for item in items:
        if isinstance(item, TableBlock):
            kept.append(item)
            continue
        lines = []
        for line in item:
            rest = [word for word in line.words if not place(word, bbox, grid, cells)]
            if rest:
                lines.append(_with_words(line, rest))
        if lines:
            kept.append(lines)
    if drawn_columns:
        grid, cells = unstack(grid, cells)
    rows = clean_rows(grid, cells, drawn_columns=drawn_columns)
    if len(rows) < 2 or len(rows[0]) < 2:
        return items  # a framed paragraph or a single column is text, not a table: the words stay
    if not caption_given:
        kept, lines = take_caption(kept, bbox, others)
        header, lines = header_from_caption(lines, rows)
    else:
        kept, lines = _lines_in(kept, caption) if caption else (kept, [])
        header = None
    if header is None:
        header, rows = split_header(rows)
    block = TableBlock(bbox=bbox, caption=lines, header=header, rows=rows)
    return _insert(kept, block)


def _lines_in(items: list[Item], box: Box) -> tuple[list[Item], list[RawLine]]:
    """(``items`` without the text lines inside ``box``, those lines)."""
    inside = [(i, j, line) for i, item in enumerate(items) if isinstance(item, list)
              for j, line in enumerate(item) if centre_in((line.x0, line.y0, line.x1, line.y1), box)]
    lines = sorted((line for _, _, line in inside), key=lambda line: (line.y0, line.x0))
    return without_lines(items, {(i, j) for i, j, _ in inside}), lines


def _insert(items: list[Item], block: TableBlock) -> list[Item]:
    """Place the table after the last item above it (in its columns), else before the first below it.

    Items are in content-stream order, where a page number or footer often comes early; anchoring on
    what is above the table keeps it after the text that introduces it.
    """
    x0, y0, x1, y1 = block.bbox
    above, below = -1, None
    for index, item in enumerate(items):
        if isinstance(item, TableBlock):
            left, top, right, bottom = item.bbox
        else:
            left, top = min(line.x0 for line in item), min(line.y0 for line in item)
            right, bottom = max(line.x1 for line in item), max(line.y1 for line in item)
        if right <= x0 or left >= x1:
            continue
        if bottom <= y0 + 2:
            above = index
        elif top >= y1 - 2 and below is None:
            below = index
    position = above + 1 if above >= 0 else below if below is not None else len(items)
    return items[:position] + [block] + items[position:]


def _with_words(line: RawLine, words: list[RawWord]) -> RawLine:
    if words and words[0].join != " ":
        words = [RawWord(words[0].text, words[0].box, " ")] + words[1:]
    return RawLine(words=words, size=line.size, bold=line.bold)


def _caption_pieces(lines: list[RawLine]) -> list[Piece]:
    pieces: list[Piece] = []
    for number, line in enumerate(lines):
        if number:  # "表7" and "name 选项的默认设置" set side by side are one line of the caption
            beside = line.y0 < lines[number - 1].y1 - 1 and line.x0 >= lines[number - 1].x1 - 1
            pieces.append((" " if beside else "\n", None))
        for index, word in enumerate(line.words):
            if index:
                pieces.append((word.join, None))
            pieces.append((word.text, word))
    if pieces:
        pieces.append(("\n", None))
    return pieces


def _heading_rows(rows: list[list[Cell]]) -> set[int]:
    """Headings of the groups below them: rows with at most half their cells right of the label filled, none
    with a figure ("Ours", "Method | Dataset: ParaSCI ACL"), in a table whose other rows have figures."""
    texts = [[" ".join(word.text for word in cell) for cell in row[1:] if cell] for row in rows]
    plain = {number for number, cells in enumerate(texts)
             if not any(is_figure(text) for text in cells) and len(cells) <= len(rows[number][1:]) / 2}
    return plain if len(plain) < len(rows) else set()


def _row_pieces(row: list[Cell]) -> list[Piece]:
    pieces: list[Piece] = [("|", None)]
    for cell in row:
        pieces.append((" ", None))
        for index, word in enumerate(cell):
            if index:  # words of one cell may come from several lines: a space, except inside Chinese
                previous = cell[index - 1].text  # or a number wrapped in a narrow column ("215,768,64" "3")
                cjk = CJK_RE.match(previous[-1]) and CJK_RE.match(word.text[0])
                number = continues_number(cell[index - 1], word)
                pieces.append(("" if cjk or number or not word.join else " ", None))
            text = word.text.replace("|", "\\|")
            pieces.append((text, RawWord(text, word.box, word.join)))
        pieces.append((" |", None))
    return pieces

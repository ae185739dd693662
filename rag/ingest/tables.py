"""Tables found by PyMuPDF become Markdown blocks whose every cell word keeps its box.

``find_tables`` takes the page's text lines (``RawLine`` blocks), asks ``page.find_tables()`` where
the tables are (``rag.ingest.rule_tables`` for tables ruled only across, ``rag.ingest.caption_tables`` for
aligned text beside a "Table N" caption), moves every word inside a table into its cell and the caption lines
above it into the table, and returns the page as a list of items: text blocks (without the table's words, so
the running text never repeats a cell) and ``TableBlock``s, each before the first text block below it. Column
headings printed above the ruled part ("2021  2022") become the header row; ``rag.ingest.table_grid``
straightens out the grid's quirks.

``TableBlock.parts`` lays a table out as Markdown text pieces, each cell word paired with its box, so
the page text can be built with exact word offsets: a citation of one row highlights that row. A table
longer than the chunk size is split into parts that each repeat the caption and the header row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

import pymupdf

from rag.ingest.caption_tables import caption_tables
from rag.ingest.pdf_layout import RawLine, RawWord
from rag.ingest.rule_tables import has_ruling, rule_tables
from rag.ingest.table_grid import Box, Cell, Grid, clean_rows, continues_number, place, split_header
from rag.ingest.table_stacks import unstack
from rag.text.language import CJK_RE, count_tokens
from rag.text.table_captions import CAPTION_LABEL_RE
from rag.text.table_text import is_figure

MAX_CAPTION_ROWS = 6
MAX_CAPTION_TOKENS = 40
MAX_TITLE_TOKENS = 16
RUNNING_LINE_TOKENS = 12  # a line this long that breaks mid-sentence is running text, not a title
_SENTENCE_END_RE = re.compile(r"[.。!?！？]\s*$")
_LOWER_START_RE = re.compile(r"[a-z]{2}")
_CLAUSE_END_RE = re.compile(r"[.。!?！？:：;；]\s*$")

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
    for table in found:
        grid = [[tuple(cell) if cell is not None else None for cell in row.cells] for row in table.rows]
        items = _cut_out(items, tuple(table.bbox), grid, drawn_columns=True)
    lines = [line for block in blocks for line in block]
    words = [word for line in lines for word in line.words]
    captions = [(line.x0, line.y0, line.x1, line.y1) for line in lines if CAPTION_LABEL_RE.match(line_text(line))]
    ruled = rule_tables(drawings, words, taken=[tuple(table.bbox) for table in found], captions=captions)
    taken = [tuple(table.bbox) for table in found] + [bbox for bbox, _ in ruled]
    for bbox, grid in ruled + caption_tables(words, captions, taken=taken, page_width=pdf_page.rect.width):
        items = _cut_out(items, bbox, grid, drawn_columns=False)
    return items


def _cut_out(items: list[Item], bbox: Box, grid: Grid, *, drawn_columns: bool) -> list[Item]:
    """Move the words inside ``bbox`` into a ``TableBlock`` placed among ``items`` by position."""
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
    kept, caption = _take_caption(kept, bbox)
    header, caption = _header_from_caption(caption, rows)
    if header is None:
        header, rows = split_header(rows)
    block = TableBlock(bbox=bbox, caption=caption, header=header, rows=rows)
    return _insert(kept, block)


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


def _take_caption(items: list[Item], bbox: Box) -> tuple[list[Item], list[RawLine]]:
    """Move the lines right above the table (or a "Table 3 ..." line right below) into its caption."""
    lines = [(i, j, line) for i, item in enumerate(items) if not isinstance(item, TableBlock)
             for j, line in enumerate(item) if line.x1 > bbox[0] and line.x0 < bbox[2]]
    chosen: list[tuple[int, int, RawLine]] = []
    edge, rows = bbox[1], 0
    while rows < MAX_CAPTION_ROWS:
        above = [entry for entry in lines if entry[2].y1 <= edge + 1 and entry not in chosen]
        if not above:
            break
        nearest = max(above, key=lambda entry: entry[2].y1)
        row = [entry for entry in above if entry[2].y1 > nearest[2].y0 + 1]  # the pieces of that visual line
        if edge - nearest[2].y1 > 1.5 * max(nearest[2].height, 1.0) + 2:
            break
        if any(_is_sentence(line_text(entry[2])) for entry in row) or _continues_paragraph(row, lines):
            break  # the end of the paragraph that introduces the table stays in the running text
        if chosen and any(count_tokens(line_text(entry[2])) > MAX_TITLE_TOKENS for entry in row):
            break  # above the line that leads into the table, only title-like lines belong to the caption
        if count_tokens(" ".join(line_text(entry[2]) for entry in chosen + row)) > MAX_CAPTION_TOKENS:
            break
        chosen += row
        rows += 1
        edge = min(entry[2].y0 for entry in row)
    below = [entry for entry in lines if entry[2].y0 >= bbox[3] - 1 and entry[2].y0 - bbox[3] < 2 * entry[2].height]
    if below:
        top = min(below, key=lambda entry: entry[2].y0)[2]
        row = sorted((entry for entry in below if entry[2].y0 < top.y1 - 1 and entry[2].y1 > top.y0 + 1),
                     key=lambda entry: entry[2].x0)  # a bold "Table 2:" and the words set beside it
        if CAPTION_LABEL_RE.match(line_text(row[0][2])):
            chosen += row
            chosen += _caption_continued(row, [entry for entry in lines if entry not in chosen])
    taken = {(i, j) for i, j, _ in chosen}
    kept: list[Item] = []
    for i, item in enumerate(items):
        rest = item if isinstance(item, TableBlock) else [line for j, line in enumerate(item) if (i, j) not in taken]
        if rest:
            kept.append(rest)
    return kept, sorted((line for _, _, line in chosen), key=lambda line: (round(line.y0), line.x0))


def _caption_continued(label_row: list[tuple[int, int, RawLine]],
                       lines: list[tuple[int, int, RawLine]]) -> list[tuple[int, int, RawLine]]:
    """The lines that carry on a caption below its table ("… when adapt-" / "ing GPT2 medium on QQP 50K."), set
    as close as the lines of one paragraph, up to ``MAX_CAPTION_TOKENS`` in all."""
    taken, last = [], label_row[0][2]
    while True:
        close = [entry for entry in lines if 0 <= entry[2].y0 - last.y1 < 0.5 * last.height and entry not in taken]
        tokens = count_tokens(" ".join(line_text(entry[2]) for entry in label_row + taken + close))
        if not close or tokens > MAX_CAPTION_TOKENS:
            return taken
        taken += close
        last = max((entry[2] for entry in close), key=lambda line: line.y1)


def _header_from_caption(caption: list[RawLine], rows: list[list[Cell]]) -> tuple[list[Cell] | None, list[RawLine]]:
    """Column headings printed above the ruled table ("2021  2022") become its header row.

    The caption's last visual line counts when it has two or more pieces right of the first (label)
    column, each over a different column; one piece starting over the label column ("(In millions,
    except percentages)" left of "2021  2022") is that column's heading.
    """
    above = [line for line in caption if line.y1 <= min(w.box[1] for row in rows for cell in row for w in cell) + 1]
    if not above:
        return None, caption
    bottom = max(line.y1 for line in above)
    row = [line for line in above if line.y1 > bottom - max(line.height, 1.0) / 2]
    spans = [(min(w.box[0] for r in rows for w in r[c]), max(w.box[2] for r in rows for w in r[c]))
             if any(r[c] for r in rows) else None for c in range(len(rows[0]))]
    if spans[0] is None:
        return None, caption
    stub = [line for line in row if line.x0 < spans[0][1] - 2]
    headings = [line for line in row if line not in stub]
    if len(headings) < 2 or len(stub) > 1 or any(line.x0 > spans[0][0] + 2 or line.x1 > min(
            line.x0 for line in headings) for line in stub):
        return None, caption
    header: list[Cell] = [list(stub[0].words) if stub else []] + [[] for _ in spans[1:]]
    for line in headings:
        centre = (line.x0 + line.x1) / 2
        column = min(range(1, len(spans)), key=lambda c: _distance(centre, spans[c]))
        if header[column]:
            return None, caption  # two headings over one column: not a header row
        header[column] = list(line.words)
    return header, [line for line in caption if line not in row]


def _continues_paragraph(row: list[tuple[int, int, RawLine]], lines: list[tuple[int, int, RawLine]]) -> bool:
    """Whether a visual line is the last line of a paragraph ("by economic factors (in millions):").

    It starts with a lower-case word, or it ends like a sentence or clause while the line right above
    it is running text (a long line) that breaks mid-sentence. A title ("(Unaudited)", "单位：元") ends
    without a full stop or colon even when a long line is right above it.
    """
    first = min(row, key=lambda entry: entry[2].x0)[2]
    last = max(row, key=lambda entry: entry[2].x1)[2]
    if _LOWER_START_RE.match(line_text(first)):  # two lower-case letters: "a、对合并报表的影响" is an item title
        return True
    if not _CLAUSE_END_RE.search(line_text(last)):
        return False
    top = min(entry[2].y0 for entry in row)
    above = [entry[2] for entry in lines if entry[2].y1 <= top + 1 and top - entry[2].y1 < max(first.height, 1.0)]
    if not above:
        return False
    previous = line_text(max(above, key=lambda line: (line.y1, -line.x0)))
    return count_tokens(previous) > RUNNING_LINE_TOKENS and not _CLAUSE_END_RE.search(previous)


def _is_sentence(text: str) -> bool:
    """A long line ending like a sentence: body text, not a title ("UBER TECHNOLOGIES, INC." is short)."""
    return bool(_SENTENCE_END_RE.search(text)) and count_tokens(text) > 8 and not CAPTION_LABEL_RE.match(text)


def _distance(x: float, span: tuple[float, float] | None) -> float:
    if span is None:
        return float("inf")
    return max(span[0] - x, 0.0, x - span[1])


def _with_words(line: RawLine, words: list[RawWord]) -> RawLine:
    if words and words[0].join != " ":
        words = [RawWord(words[0].text, words[0].box, " ")] + words[1:]
    return RawLine(words=words, size=line.size, bold=line.bold)


def line_text(line: RawLine) -> str:
    return "".join((word.join if index else "") + word.text for index, word in enumerate(line.words))


def _caption_pieces(lines: list[RawLine]) -> list[Piece]:
    pieces: list[Piece] = []
    for number, line in enumerate(lines):
        if number:
            pieces.append(("\n", None))
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

"""Which lines around a table are its caption, and column headings printed above its ruled part.

``take_caption`` moves the title lines right above a table (or a "Table 3 ..." line right below it, with the
lines that carry it on) out of the running text into the table's caption; the end of the paragraph that
introduces the table stays in the text. ``header_from_caption`` turns the caption's last line into the
header row when it holds one heading over each column ("2021  2022").
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from rag.ingest.pdf_layout import RawLine
from rag.ingest.table_grid import RULE_TOUCH, Box, Cell
from rag.text.language import count_tokens
from rag.text.table_captions import CAPTION_LABEL_RE, is_caption_label

MAX_CAPTION_ROWS = 6
LABEL_BELOW_HEIGHTS = 2.5  # a "Table N" line this many line heights under a table (Debian's reference: 2.2)
# points: a table's caption label lies this close under it, or over it (the first line of up to six caption lines)
LABEL_REACH_BELOW, LABEL_REACH_ABOVE = 25.0, 90.0
MAX_CAPTION_TOKENS = 40
MAX_TITLE_TOKENS = 16
RUNNING_LINE_TOKENS = 12  # a line this long that breaks mid-sentence is running text, not a title
_SENTENCE_END_RE = re.compile(r"[.。!?！？]\s*$")
_LOWER_START_RE = re.compile(r"[a-z]{2}")
_CLAUSE_END_RE = re.compile(r"[.。!?！？:：;；]\s*$")

Item = Any  # a text block (a list of lines) or a table already placed, which is kept as it is


Entry = tuple[int, int, RawLine]  # (item, line in it, the line)


def take_caption(items: list[Item], bbox: Box, others: Sequence[Box] = ()) -> tuple[list[Item], list[RawLine]]:
    """Move the lines right above the table (or a "Table 3 ..." line right below) into its caption; a caption
    label between two tables belongs to the nearer (``others``: the page's other tables), unless the nearer is
    the one above and already has its label over it ("Table 1: …" over Table 1, "Table 2: …" under it)."""
    lines = [(i, j, line) for i, item in enumerate(items) if isinstance(item, list)
             for j, line in enumerate(item) if line.x1 > bbox[0] and line.x0 < bbox[2]]
    rows = _labelled_paragraph(lines, bbox[1])  # nearest first
    if rows and nearer_elsewhere(_box(rows[-1][0][2]), bbox, others):
        rows = []
    rows = rows or _title_rows(lines, bbox[1])
    chosen = [entry for row in reversed(rows) for entry in row]
    labelled = any(is_caption_label(line_text(row[0][2])) for row in rows)  # a second label is the next table's
    below = [] if labelled else [entry for entry in lines if entry[2].y0 >= bbox[3] - RULE_TOUCH and entry not in chosen
                                 and entry[2].y0 - bbox[3] < LABEL_BELOW_HEIGHTS * entry[2].height]
    if below:
        top = min(below, key=lambda entry: entry[2].y0)[2]
        row = sorted((entry for entry in below if entry[2].y0 < top.y1 - 1 and entry[2].y1 > top.y0 + 1),
                     key=lambda entry: entry[2].x0)  # a bold "Table 2:" and the words set beside it
        if is_caption_label(line_text(row[0][2])) and not nearer_elsewhere(_box(row[0][2]), bbox, others):
            chosen += row
            chosen += _caption_continued(row, [entry for entry in lines if entry not in chosen])
    return without_lines(items, {(i, j) for i, j, _ in chosen}), [line for _, _, line in chosen]


def without_lines(items: list[Item], taken: set[tuple[int, int]]) -> list[Item]:
    """``items`` without the lines at ``taken`` (item, line) positions; an item left empty goes too."""
    kept: list[Item] = []
    for i, item in enumerate(items):
        rest = item if not isinstance(item, list) else [line for j, line in enumerate(item) if (i, j) not in taken]
        if rest:
            kept.append(rest)
    return kept


def nearer_elsewhere(caption: Box, bbox: Box, others: Sequence[Box]) -> bool:
    """Whether another table over the same columns lies nearer the caption line, above or below it, than ``bbox``."""
    def distance(box: Box) -> float:
        return max(box[1] - caption[3], caption[1] - box[3], 0.0)

    return any(box[0] < caption[2] and caption[0] < box[2] and distance(box) < distance(bbox) for box in others)


def _box(line: RawLine) -> Box:
    return line.x0, line.y0, line.x1, line.y1


def label_within_reach(box: Box, label: Box) -> bool:
    """Whether a caption label line sits right under the table at ``box`` or over it, across its columns."""
    return (label[0] < box[2] and box[0] < label[2]
            and (-RULE_TOUCH <= label[1] - box[3] <= LABEL_REACH_BELOW
                 or -RULE_TOUCH <= box[1] - label[3] <= LABEL_REACH_ABOVE))


def labelled_elsewhere(box: Box, caption: Box, captions: Sequence[Box]) -> bool:
    """Whether the table at ``box`` has a caption label other than ``caption`` within reach: a table has one label,
    so "Table 1: …" over Table 1 leaves "Table 2: …" set under it to Table 2."""
    return any(label != caption and label_within_reach(box, label) for label in captions)


def _rows_above(lines: list[Entry], top: float) -> Iterator[tuple[list[Entry], float, float]]:
    """The visual lines over ``top``, nearest first, each left to right with the gap under it (to ``top`` or to the
    line below) and the height of its lowest piece."""
    edge, seen = top, []
    while True:
        above = [entry for entry in lines if entry[2].y1 <= edge + 1 and entry not in seen]
        if not above:
            return
        nearest = max(above, key=lambda entry: entry[2].y1)
        row = sorted((entry for entry in above if entry[2].y1 > nearest[2].y0 + 1), key=lambda entry: entry[2].x0)
        yield row, edge - nearest[2].y1, max(nearest[2].height, 1.0)
        seen += row
        edge = min(entry[2].y0 for entry in row)


def _title_rows(lines: list[Entry], top: float) -> list[list[Entry]]:
    """The title-like visual lines right above the table, nearest first; the end of the paragraph that
    introduces the table stays in the running text."""
    rows: list[list[Entry]] = []
    for row, gap, height in _rows_above(lines, top):
        if len(rows) == MAX_CAPTION_ROWS or gap > 1.5 * height + 2:
            break
        if any(_is_sentence(line_text(entry[2])) for entry in row) or _continues_paragraph(row, lines):
            break
        if rows and any(count_tokens(line_text(entry[2])) > MAX_TITLE_TOKENS for entry in row):
            break  # above the line that leads into the table, only title-like lines belong to the caption
        if count_tokens(" ".join(line_text(entry[2]) for r in rows + [row] for entry in r)) > MAX_CAPTION_TOKENS:
            break
        rows.append(row)
    return rows


def _labelled_paragraph(lines: list[Entry], top: float) -> list[list[Entry]]:
    """The visual lines of the paragraph right above the table, nearest first, when it starts with a caption label
    ("Table 1.2 复杂表格示例1。…"), else none: a caption that reads like a sentence is still the caption when its
    label leads it."""
    rows: list[list[Entry]] = []
    for row, gap, height in _rows_above(lines, top):
        if len(rows) == MAX_CAPTION_ROWS or gap > (0.5 * height if rows else 1.5 * height + 2):
            return []  # the table's own gap first, then the spacing of one paragraph's lines
        rows.append(row)
        if count_tokens(" ".join(line_text(entry[2]) for r in rows for entry in r)) > MAX_CAPTION_TOKENS:
            return []
        if is_caption_label(line_text(row[0][2])):
            return rows
    return []


def _caption_continued(label_row: list[Entry], lines: list[Entry]) -> list[Entry]:
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


def header_from_caption(caption: list[RawLine], rows: list[list[Cell]]) -> tuple[list[Cell] | None, list[RawLine]]:
    """Column headings printed above the ruled table ("2021  2022") become its header row.

    The caption's last visual line counts when it has two or more pieces right of the first (label)
    column, each over a different column; one piece starting over the label column ("(In millions,
    except percentages)" left of "2021  2022") is that column's heading. A line led by a caption label ("表7  name
    选项的默认设置") is the caption, however its pieces fall.
    """
    above = [line for line in caption if line.y1 <= min(w.box[1] for row in rows for cell in row for w in cell) + 1]
    if not above:
        return None, caption
    bottom = max(line.y1 for line in above)
    row = [line for line in above if line.y1 > bottom - max(line.height, 1.0) / 2]
    if is_caption_label(line_text(min(row, key=lambda line: line.x0))):
        return None, caption
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


def _continues_paragraph(row: list[Entry], lines: list[Entry]) -> bool:
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


def line_text(line: RawLine) -> str:
    return "".join((word.join if index else "") + word.text for index, word in enumerate(line.words))

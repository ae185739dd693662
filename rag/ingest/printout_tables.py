"""Tables a program printed: R's matrices, coefficient tables and summaries set in a typewriter font.

Statistics papers and R vignettes show results as the console printed them, not as typeset tables:

    R> summary(refit(Fitted))
    $Comp.2
                    Estimate Std. Error z value  Pr(>|z|)
    (Intercept)   -0.1470652  0.0963031 -1.5271  0.126734
    Gendermale     0.0068805  0.0550486  0.1250  0.900531

Nothing is drawn, there is no "Table N" caption, and where the gaps are wide MuPDF reads such a block column by
column, so as text a question about one coefficient finds the printout only by luck, and a row never reads as a
row. R prints the column names right-aligned over right-aligned values, the row names flush left, every character
one pitch wide. A table here is exactly that: a line of column names whose right ends meet the right ends of the
values of two or more columns in the lines under it; two or more such lines, each led by its row name at the
printout's left edge; and every word of it at whole multiples of one character pitch from that edge (which only a
typewriter font gives, whatever the PDF calls the font: vignettes built with Type 3 fonts name none).

R's ``ftable`` prints a cross-tabulation with its variables' names and levels in the margins:

    > ftable(addmargins(ae, 1), col.vars=3:2)
                                   D.nD        D.DM           X
                             sex      M      F     M     F     M     F
    cut(A, c(30, a.kn, Inf))
    (30,40]                        9135   4650   597   277 12080  9648

Each level of the outer column variable ends where the first of its columns ends, so a line above the column names
whose every word ends at a column's right end is a heading row of the same table; and the row variables' names
take a line of their own, at the row names' edge, between the column names and the first row.

Printouts of one session look alike (xts prints the same prices five ways), so the command that printed a table is
its caption: the prompt line above it (">" or "R>", with its "+" continuation lines) and whatever it printed before
the table ("Call: …", "$Comp.2"), or, without a prompt near, the title line right above ("Estimates:").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median
from itertools import chain, islice
from typing import Iterable, Iterator

from rag.ingest.pdf_layout import RawWord
from rag.ingest.table_grid import Box, Grid, centre_in, text_lines, word_middle
from rag.ingest.table_wraps import is_figure_word

PITCH_SLACK = 0.3  # of a pitch: how far a word's left edge may sit off the character grid
EDGE_SLACK = 0.5  # of a pitch: a value's right end meets its column name's
MAX_LINE_GAP_HEIGHTS = 1.8  # between two lines of one printout (a blank line ends it)
MIN_ROWS = 2
MIN_COLUMNS = 2  # columns of values beside the row names
MAX_CAPTION_LINES = 8  # from the prompt line down to the table
CAPTION_GAP_HEIGHTS = 2.6  # Sweave sets a blank line between a command and its output
_PROMPT_RE = re.compile(r"^(R?>|\+)$")
_MISSING = {"NA", "NaN", "Inf", "-Inf", "<NA>", "TRUE", "FALSE"}  # values R prints in a column of figures
_SIGNIFICANCE_RE = re.compile(r"^[*.]{1,3}$")  # R's significance codes after the last column
_INDEX_RE = re.compile(r"\d,$|\.{3,}")  # "12," of an index, a dot leader: lists that point to pages


@dataclass(frozen=True)
class Printout:
    """A table found in a program's printed output: its box, its grid, and the box of its caption lines (the command
    that printed it), or None."""

    bbox: Box
    grid: Grid
    caption: Box | None


def printout_tables(words: Iterable[RawWord], *, taken: list[Box]) -> list[Printout]:
    """The printed tables among ``words``, outside ``taken`` (tables found already)."""
    free = [word for word in words if not any(centre_in(word.box, box) for box in taken)]
    lines = [sorted(line, key=lambda word: word.box[0]) for line in text_lines(free)]
    found: list[Printout] = []
    used: set[int] = set()
    for index in range(len(lines) - MIN_ROWS):
        if index in used:
            continue
        table = _table_under(lines, index)
        if table is None:
            continue
        rows, edges, pitch = table
        top = _heading_rows_above(lines, index, edges, used)
        block = lines[top:index + 1 + rows]
        used.update(range(top, index + 1 + rows))
        left = min(line[0].box[0] for line in lines[index + 1:index + 1 + rows])
        found.append(Printout(_bbox(block), _grid(block, edges, pitch, index - top),
                              _caption(lines, top, left, pitch, used)))
    return found


def _table_under(lines: list[list[RawWord]], header: int) -> tuple[int, list[float], float] | None:
    """(rows, column right edges, pitch) of the table headed by ``lines[header]``, or None."""
    names = lines[header]
    if _is_prompt(names) or any(_INDEX_RE.search(word.text) for word in names):
        return None
    following = _lines_below(lines, header)
    sample = list(islice(following, MIN_ROWS + 2))
    # an ftable's row variables' names: a line at the rows' left edge that ends before their values
    variables = sample[:1] if len(sample) > MIN_ROWS and _names_the_rows(sample[0], sample[1]) else []
    if variables:  # the sample is of the rows under it
        sample = sample[1:] + list(islice(following, 1))
    # every table's first rows hold two values or more beside their names (most lines of a page do not)
    if len(sample) < MIN_ROWS or any(sum(_is_value(word.text) for word in line[1:]) < MIN_COLUMNS
                                     for line in sample[:MIN_ROWS]):
        return None
    edges = _column_edges(names, sample)
    if len(edges) < MIN_COLUMNS:
        return None
    left = min(line[0].box[0] for line in sample[:MIN_ROWS])
    rows: list[list[RawWord]] = list(variables)
    for line in chain(sample, following):  # the body: rows led by their name at the left edge
        if abs(line[0].box[0] - left) > 2 or not _fills(line, edges) or any(_INDEX_RE.search(w.text) for w in line):
            break
        rows.append(line)
    # R leaves the row names' column without a name
    if len(rows) - len(variables) < MIN_ROWS or names[0].box[0] <= left + 1:
        return None
    pitch = _pitch([names, *rows])
    return (len(rows), edges, pitch) if pitch and _on_pitch([names, *rows], left, pitch) else None


def _names_the_rows(line: list[RawWord], first_row: list[RawWord]) -> bool:
    """Whether ``line`` is an ftable's line of row variables' names above ``first_row``: starting where the row
    names start and ending before the first row's values do."""
    return (len(first_row) > 1 and abs(line[0].box[0] - first_row[0].box[0]) <= 2
            and line[-1].box[2] < first_row[1].box[0])


def _heading_rows_above(lines: list[list[RawWord]], header: int, edges: list[float], used: set[int]) -> int:
    """The index of the first line of the table's heading: ``header``, or a line above it (an ftable's outer column
    variable's levels, up to two such lines) whose two or more words each end at one of the columns' right ends."""
    top = header
    while top > 0 and header - top < 2 and top - 1 not in used:
        line = lines[top - 1]
        if (len(line) < 2 or _gap(line, lines[top]) > MAX_LINE_GAP_HEIGHTS or _is_prompt(line)
                or not all(any(_meets(word.box[2], edge, word) for edge in edges) for word in line)):
            break
        top -= 1
    return top


def _lines_below(lines: list[list[RawWord]], header: int) -> Iterator[list[RawWord]]:
    """The lines under ``lines[header]`` up to a blank line or a prompt."""
    above = lines[header]
    for line in lines[header + 1:]:
        if _gap(above, line) > MAX_LINE_GAP_HEIGHTS or _is_prompt(line):
            return
        yield line
        above = line


def _column_edges(names: list[RawWord], sample: list[list[RawWord]]) -> list[float]:
    """Right ends of the column names that the values of the first rows end at (most of them, each edge)."""
    edges = []
    for name in names:
        meeting = sum(1 for line in sample if any(_meets(word.box[2], name.box[2], name) for word in line[1:]
                                                 if _is_value(word.text)))
        if meeting * 2 > len(sample) and meeting >= MIN_ROWS:
            edges.append(name.box[2])
    return edges


def _fills(line: list[RawWord], edges: list[float]) -> bool:
    """Whether the line's values end at two or more of the columns' right edges and nothing but significance codes
    ("***") runs past the last."""
    met = sum(1 for edge in edges if any(_is_value(word.text) and _meets(word.box[2], edge, word) for word in line[1:]))
    past = [word for word in line if word.box[2] > edges[-1] + _slack(word)]
    return met >= min(MIN_COLUMNS, len(edges)) and all(_SIGNIFICANCE_RE.match(word.text) for word in past)


def _pitch(block: list[list[RawWord]]) -> float | None:
    """The median width of a character in the block's longer words."""
    widths = [(word.box[2] - word.box[0]) / len(word.text) for line in block for word in line if len(word.text) >= 4]
    pitch = median(widths) if widths else 0.0
    return pitch if pitch > 0 else None


def _on_pitch(block: list[list[RawWord]], left: float, pitch: float) -> bool:
    """Whether every word starts a whole number of ``pitch`` from ``left`` and is as wide as its characters: only a
    typewriter font sets text so."""
    for line in block:
        for word in line:
            offset = (word.box[0] - left) / pitch
            if abs(offset - round(offset)) > PITCH_SLACK or abs(word.box[2] - word.box[0] - len(word.text) * pitch) > pitch:
                return False
    return True


def _caption(lines: list[list[RawWord]], header: int, left: float, pitch: float, used: set[int]) -> Box | None:
    """The box of the lines above the table back to the prompt that printed it (its continuation lines and the
    output before the table with it); without a prompt near, the one line right above."""
    taken: list[list[RawWord]] = []
    below = lines[header]
    for index in range(header - 1, max(header - 1 - MAX_CAPTION_LINES, -1), -1):
        line = lines[index]
        if index in used or _gap(line, below) > CAPTION_GAP_HEIGHTS or not _on_pitch([line], left, pitch):
            break
        taken.append(line)
        below = line
        if _is_prompt(line) and line[0].text != "+":
            break
    else:
        taken = taken[:1]
    if taken and not _is_prompt(taken[-1]):
        taken = taken[:1]
    return _bbox(taken) if taken else None


def _grid(block: list[list[RawWord]], edges: list[float], pitch: float, header: int = 0) -> Grid:
    """A row per line; the row names' column up to the first values, then a column up to each right edge.
    ``block[header]`` holds the column names (lines above it are heading rows too)."""
    names, body = block[header], block[header + 1:]
    starts = [word.box[0] for word in names if word.box[2] <= edges[0] + _slack(word)]  # the first column's name
    starts += [word.box[0] for line in body for word in line[1:] if _meets(word.box[2], edges[0], word)]
    x0 = min(word.box[0] for line in block for word in line) - 1
    boundaries = [x0, min(starts) - pitch / 2] + [edge + pitch / 2 for edge in edges]
    boundaries[-1] = edges[-1] + 1
    centres = [word_middle(line[0]) for line in block]
    top, bottom = min(w.box[1] for w in block[0]) - 1, max(w.box[3] for w in block[-1]) + 1
    bands = [top] + [(a + b) / 2 for a, b in zip(centres, centres[1:])] + [bottom]
    return [[(boundaries[c], bands[r], boundaries[c + 1], bands[r + 1]) for c in range(len(boundaries) - 1)]
            for r in range(len(block))]


def _bbox(lines: list[list[RawWord]]) -> Box:
    words = [word for line in lines for word in line]
    return (min(w.box[0] for w in words) - 1, min(w.box[1] for w in words) - 1,
            max(w.box[2] for w in words) + 1, max(w.box[3] for w in words) + 1)


def _is_value(text: str) -> bool:
    return text in _MISSING or is_figure_word(text)


def _is_prompt(line: list[RawWord]) -> bool:
    return bool(_PROMPT_RE.match(line[0].text))


def _meets(end: float, edge: float, word: RawWord) -> bool:
    return abs(end - edge) <= _slack(word)


def _slack(word: RawWord) -> float:
    return EDGE_SLACK * (word.box[2] - word.box[0]) / max(len(word.text), 1)


def _gap(upper: list[RawWord], lower: list[RawWord]) -> float:
    """The blank between two lines, in line heights."""
    height = max(word.box[3] - word.box[1] for word in lower)
    return (min(word.box[1] for word in lower) - max(word.box[3] for word in upper)) / max(height, 1.0)

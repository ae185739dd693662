"""Two-column lists without any rule: a term on the left, its meaning in a column of its own on the right, row after
row ("\\dbval   当前属性的值", Kpathsea's "4   文件的打开与关闭操作", zhnumber's "Normal 以小写形式输出中文数字").
Manuals set their options, commands and codes this way; read as text, each term and its meaning fall on lines of their
own, and a question about one term finds neither its row nor its neighbours.

A list is lines whose words break at one gap wider than a word space, every meaning starting at the same x and every
term starting (or, set flush right, ending; or centred) at the same x, at a steady pitch; a line starting at the
meaning's x alone is a meaning wrapped onto it; a group's name on the left of a group's first term stays text beside the
list. ``MIN_LIST_ROWS`` terms or more. What looks the same but is not a list of terms: numbered or lettered items,
footnotes, line-numbered code and tables of contents count up ("1 2 3", "a b c", "2.1 2.2"); bullets have no term;
running text beside margin notes or in two columns fills its lines to one right edge; code with its comments aligned has
the comment in the meaning's place, and code cut at a wide space opens a bracket in the term that it closes in the
meaning; tables of contents, indexes and a chart's ticks hold page numbers or figures in both columns. Three columns or
more are a table of figures or codes, left to the ways that need a rule or a caption. Looked for last, outside every
table found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from rag.ingest.pdf_layout import RawWord
from rag.ingest.rule_tables import _overlaps
from rag.ingest.table_grid import MIN_COLUMN_GAP, WORD_SPACE_HEIGHTS, Box, Grid, centre_in, text_lines, word_middle

MIN_LIST_ROWS = 4  # fewer terms could be two labels beside a paragraph, or a margin note beside running text
MAX_TERM_CHARS = 32  # a term is a name, a value or a code, not a line of running text
INDEX_SHARE = 0.6  # of the terms and meanings that end with page numbers: an index (a list's codes seldom do)
MIN_RUNNING_CHARS = 20  # a line of running text is this long or longer
SAME_X = 1.5  # points between the starts (or ends) of one column's lines
ROW_PITCH_BREAK = 1.8  # a gap this many line pitches tall ends the list
FIRST_PITCH_HEIGHTS = 2.5  # the widest first step between rows, in line heights (items spaced apart: 1.9)
_MARKER_RE = re.compile(r"^[\[(]?(?:\d+(?:\.\d+)*|[a-zA-Z]|[ivxlcdm]+)[.)\]:]?$")
_PAGE_NUMBER_RE = re.compile(r"^[\s.·…]*(?:\d+(?:[–-]\d+)?|[ivxlc]+|[IVXLC]+)$")  # "· 12", ". . . 302", "xii"
_FIGURE_RE = re.compile(r"^[-+−]?\d[\d.,]*%?(?:\s|$)")
_INDEX_ENTRY_RE = re.compile(r"\D[,\s]\s*\d+(?:[–-]\d+)?$")  # "polar, 20", "principal, 6–8", "\\stockwidth 16"
_COMMENT_RE = re.compile(r"^(?:%|#|//|--|;)")
_WORDY_RE = re.compile(r"[0-9A-Za-z\u3400-\u9fff]")  # a term or meaning names something; "•" and "⋆" do not


@dataclass
class _Row:
    term: str
    term_x0: float
    term_x1: float
    lines: list[list[RawWord]]  # the term's line (term and meaning) first, then the lines its meaning wraps onto
    tails: list[tuple[float, str]]  # of each of its lines: where it ends and its text from the meaning on (``_tail``)
    crowded: bool  # whether the term's line has a third column (``_crowded``)
    before: str  # what stands before the term on its line: a group's name, a line number of code, a margin note

    @property
    def term_centre(self) -> float:
        return (self.term_x0 + self.term_x1) / 2


@dataclass
class _List:
    meaning_x: float
    height: float  # of its first line
    right: float  # where its lines end: a meaning set in columns of its own goes on past its first piece
    rows: list[_Row] = field(default_factory=list)
    middles: list[float] = field(default_factory=list)  # of the run's lines, top down

    @property
    def terms(self) -> list[str]:
        return [row.term for row in self.rows]

    @property
    def term_left(self) -> float:
        return min(row.term_x0 for row in self.rows)


def aligned_list_tables(words: Iterable[RawWord], *, taken: list[Box]) -> list[tuple[Box, Grid]]:
    """(bbox, grid) of each two-column list of terms on the page, outside the boxes in ``taken``.

    Args:
        words: The page's words.
        taken: Tables already found on the page.
    """
    free = [word for word in words if not any(centre_in(word.box, box) for box in taken)]
    tables: list[tuple[Box, Grid]] = []
    for found in (stretch for run in _runs(text_lines(free)) for stretch in _aligned_stretches(run)):
        if _is_list(found):
            bbox, grid = _grid(found)
            if not any(_overlaps(bbox, box) for box, _ in tables):
                tables.append((bbox, grid))
    return tables


def _runs(lines: list[list[RawWord]]) -> list[_List]:
    """Runs of lines holding a term and a meaning at the same meaning x, with the lines each meaning wraps onto. A page
    can set a margin note beside a list, their lines interleaved, so each run looks for its own column in every line
    and passes over lines with nothing across its width; a line with something else there, or one after a gap of
    ``ROW_PITCH_BREAK`` of the run's pitches, ends the run. A piece is one run's term and one run's meaning at most, and
    may be both: in a list with a column of group names on its left ("Simulation  sim.map  Generate a genetic map"),
    the names' run would take the terms as meanings and a term standing alone as a meaning wrapped onto its line."""
    runs: list[_List] = []
    open_runs: list[_List] = []
    for line in lines:
        pieces = _pieces(line)
        terms: set[int] = set()
        meanings: set[int] = set()
        still_open = []
        for found in open_runs:
            index = next((i for i, piece in enumerate(pieces)
                          if abs(piece[0].box[0] - found.meaning_x) <= SAME_X and i not in meanings), None)
            if index is None:
                if not any(_across(piece, found) for piece in pieces):
                    still_open.append(found)  # another column's line: the run goes on below it
                continue
            middle = word_middle(pieces[index][0])
            if not _steady(found, middle):
                continue
            meaning = pieces[index]
            term = pieces[index - 1] if index else None
            if term is None or term[-1].box[2] < found.term_left:  # nothing in the term's column
                found.rows[-1].lines.append(meaning)  # the meaning wrapped onto this line
                found.rows[-1].tails.append(_tail(pieces, index))
            elif index - 1 not in terms:
                found.rows.append(_row(pieces, index))
                terms.add(index - 1)
            else:
                continue
            found.right = max(found.right, pieces[-1][-1].box[2])
            meanings.add(index)
            found.middles.append(middle)
            still_open.append(found)
        for index in range(1, len(pieces)):
            if index - 1 not in terms and index not in meanings:
                meaning = pieces[index]
                found = _List(meaning_x=meaning[0].box[0], height=meaning[0].box[3] - meaning[0].box[1],
                              right=pieces[-1][-1].box[2], rows=[_row(pieces, index)])
                terms.add(index - 1)
                meanings.add(index)
                found.middles.append(word_middle(meaning[0]))
                runs.append(found)
                still_open.append(found)
        open_runs = still_open
    return runs


def _across(piece: list[RawWord], found: _List) -> bool:
    """Whether a piece of a line lies across the run's width (from its terms to its meanings' right end)."""
    return piece[0].box[0] < found.right and piece[-1].box[2] > found.term_left - SAME_X


def _pieces(line: list[RawWord]) -> list[list[RawWord]]:
    """The line's words in runs split at every gap wider than a word space."""
    line = sorted(line, key=lambda word: word.box[0])
    height = max(word.box[3] - word.box[1] for word in line)
    min_gap = max(MIN_COLUMN_GAP, WORD_SPACE_HEIGHTS * height)
    pieces = [[line[0]]]
    for word in line[1:]:
        if word.box[0] - pieces[-1][-1].box[2] >= min_gap:
            pieces.append([word])
        else:
            pieces[-1].append(word)
    return pieces


def _steady(found: _List, middle: float) -> bool:
    """Whether a line at ``middle`` follows the run's lines at its pitch."""
    if len(found.middles) < 2:  # a first step of a few line heights at most
        return middle - found.middles[-1] <= FIRST_PITCH_HEIGHTS * found.height
    pitches = sorted(b - a for a, b in zip(found.middles, found.middles[1:]))
    return middle - found.middles[-1] <= ROW_PITCH_BREAK * pitches[len(pitches) // 2]


def _crowded(pieces: list[list[RawWord]], term: list[RawWord], meaning: list[RawWord]) -> bool:
    """Whether the line holds another piece on the term's baseline: a third column. A margin note set at a pitch of
    its own lands in the same line now and then, but off the baseline."""
    return any(abs(word_middle(piece[0]) - word_middle(term[0])) <= SAME_X
               for piece in pieces if piece is not term and piece is not meaning)


def _tail(pieces: list[list[RawWord]], index: int) -> tuple[float, str]:
    """Where the line ends, and its text from the piece at ``index`` on: a justified line of running text can space
    its words wider than the gap that makes a piece."""
    return pieces[-1][-1].box[2], " ".join(word.text for piece in pieces[index:] for word in piece)


def _row(pieces: list[list[RawWord]], index: int) -> _Row:
    """The row whose term is the piece before ``index`` and whose meaning is the piece at it."""
    term, meaning = pieces[index - 1], pieces[index]
    return _Row(term=" ".join(word.text for word in term), term_x0=term[0].box[0], term_x1=term[-1].box[2],
                lines=[term + meaning], tails=[_tail(pieces, index)], crowded=_crowded(pieces, term, meaning),
                before=" ".join(word.text for piece in pieces[:index - 1] for word in piece))


def _aligned_stretches(run: _List) -> list[_List]:
    """The run cut where its terms stop starting, ending or being centred at one x: a page's margin notes, set flush
    right beside its running text, can run straight into a list of values set the same way."""
    stretches: list[_List] = []
    first = 0
    for number in range(1, len(run.rows) + 1):
        rows = run.rows[first:number + 1]
        if number == len(run.rows) or not (_all_same([row.term_x0 for row in rows])
                                           or _all_same([row.term_x1 for row in rows])
                                           or _all_same([row.term_centre for row in rows])):
            stretches.append(_List(meaning_x=run.meaning_x, height=run.height, right=run.right,
                                   rows=run.rows[first:number]))
            first = number
    return stretches


def _all_same(values: list[float]) -> bool:
    return max(values) - min(values) <= SAME_X


def _is_list(found: _List) -> bool:
    """Whether a stretch of aligned rows is a list of terms: enough of them, none a running line, an item marker or a
    line of code with its comment, and meanings that name something."""
    rows = len(found.rows)
    if rows < MIN_LIST_ROWS or len(set(found.terms)) < rows / 2:
        return False
    if sum(row.crowded for row in found.rows) * 2 > rows:
        return False  # three columns or more: a table of figures, which needs its caption (``caption_tables``)
    if any(len(term) > MAX_TERM_CHARS or not _WORDY_RE.search(term) for term in found.terms):
        return False
    meanings = [" ".join(word.text for word in row.lines[0] if word.box[0] >= found.meaning_x - SAME_X)
                for row in found.rows]
    if sum(1 for meaning in meanings if _COMMENT_RE.match(meaning)) * 2 >= rows:
        return False
    if sum(len(row.lines) for row in found.rows) > 2 * rows:
        return False  # meanings of three lines and more on average: margin notes beside paragraphs
    tails = [tail for row in found.rows for tail in row.tails]
    ends = [end for end, _ in tails]
    lengths = sorted(len(text) for _, text in tails)
    if _share_same(ends) * 2 > len(ends) and lengths[len(lengths) // 2] >= MIN_RUNNING_CHARS:
        return False  # lines filled to one right edge: running text beside margin notes
    if all(_PAGE_NUMBER_RE.match(meaning) for meaning in meanings):
        return False  # a table of contents
    figures = sum(1 for term, meaning in zip(found.terms, meanings)
                  if _FIGURE_RE.match(term) and _FIGURE_RE.match(meaning))
    if figures * 2 > rows:
        return False  # the ticks of a chart's two axes
    if sum(1 for text in found.terms + meanings if _INDEX_ENTRY_RE.search(text)) > INDEX_SHARE * 2 * rows:
        return False  # an index set in columns: "polar, 20    relpoint, 29", "\\intextsep 25    F"
    leads = [f"{row.before} {row.term}".lstrip() for row in found.rows]
    if _numbered(found.terms) or _numbered(leads) or _numbered([text for _, text in tails]):
        return False  # numbered lines of code, beside margin notes or with names set in the margin
    if sum(1 for term in found.terms if _opens_more(term)) * 4 > rows:
        return False  # lines of code cut at a wide space: "plot(out.em,   chr=c(1,4,15))"
    if len(set(meanings)) < rows / 2 or not all(_WORDY_RE.search(meaning) for meaning in meanings):
        return False  # "⋆" beside each margin note names nothing
    return not _counts_up(found.terms)


def _opens_more(text: str) -> bool:
    """Whether ``text`` opens more brackets than it closes."""
    return sum(text.count(mark) for mark in "([{") > sum(text.count(mark) for mark in ")]}")


def _share_same(values: list[float]) -> int:
    """How many of ``values`` lie within ``SAME_X`` of the most common one."""
    return max(sum(1 for other in values if abs(other - value) <= SAME_X) for value in values)


def _counts_up(terms: list[str]) -> bool:
    """Whether the terms are item markers that count ("1." "2." "3.", "(a)" "(b)", "2.1" "2.2", line numbers): a
    numbered list or a table of contents. Codes that do not count ("1 2 4 8" debug levels) are terms."""
    if not all(_MARKER_RE.match(term) for term in terms):
        return False
    ordinals = [_ordinal(term.strip("[]().:")) for term in terms]
    steps = [b - a for a, b in zip(ordinals, ordinals[1:]) if a is not None and b is not None]
    return bool(steps) and sum(1 for step in steps if step == 1) * 2 > len(steps)


def _numbered(lines: list[str]) -> bool:
    """Whether most of the lines start with a number and those numbers count up: numbered lines of code."""
    numbers = [line.split(" ", 1)[0] for line in lines if line.split(" ", 1)[0].isdigit()]
    return len(numbers) * 2 > len(lines) and _counts_up(numbers)


def _ordinal(marker: str) -> int | None:
    last = marker.rsplit(".", 1)[-1]
    if last.isdigit():
        return int(last)
    if len(last) == 1 and last.isalpha():
        return ord(last.lower())
    return None


def _grid(found: _List) -> tuple[Box, Grid]:
    """The list's bbox and a two-column grid, a row per term from its line's top to the next term's."""
    tops = [min(word.box[1] for word in row.lines[0]) for row in found.rows]
    bottom = max(word.box[3] for row in found.rows for line in row.lines for word in line)
    x0 = found.term_left - 1
    x1 = found.right + 1
    cut = found.meaning_x - SAME_X
    grid: Grid = []
    for number, top in enumerate(tops):
        row_bottom = tops[number + 1] - 0.5 if number + 1 < len(tops) else bottom + 1
        grid.append([(x0, top - 0.5, cut, row_bottom), (cut, top - 0.5, x1, row_bottom)])
    return (x0, tops[0] - 1, x1, bottom + 1), grid

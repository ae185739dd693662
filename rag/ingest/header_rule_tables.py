"""Tables ruled under their header line only: a manual's longtable of options, "Option | Short description |
Section" over a single rule, then dozens of rows with no rule over or under them (the caption manual's reference,
lua-physical's unit tables), which the stacks of rules in ``rag.ingest.rule_tables`` never see.

Without a rule under the body, where the table ends is read from its lines: they follow the rule at a steady
pitch, each run of words within one column, until a gap of ``ROW_PITCH_BREAK`` pitches, another rule, or a line
across a column edge (the text after the table); a rule of the table's own width between groups of rows is crossed.
It counts with ``MIN_HEADER_RULED_ROWS`` lines or more under one heading per column and none across two, as the
uncaptioned table of commands between three rules does (``rule_tables._headed``): a rule under a section title has
one run of words over it, and prose under a rule runs across the columns its first lines seem to make. A running head
over its rule is passed over. Looked for last, outside every table found.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag.ingest.pdf_layout import RawWord
from rag.ingest.rule_tables import SAME_EDGE, _columns, _headed, _header_top, _homes, _overlaps, _rules, text_grid
from rag.ingest.table_grid import RULE_TOUCH, Box, Grid, centre_in, text_lines, word_middle

MIN_HEADER_RULED_ROWS = 4  # lines under a lone header rule: fewer could be a heading's rule over a short list
ROW_PITCH_BREAK = 1.6  # a gap this many row pitches tall ends the table


def header_rule_tables(drawings: list[dict], words: Iterable[RawWord], *, taken: list[Box]) -> list[tuple[Box, Grid]]:
    """(bbox, grid) of each table ruled under its header line only, outside the boxes in ``taken``.

    Args:
        drawings: The page's ``get_cdrawings()``.
        words: The page's words.
        taken: Tables already found on the page.
    """
    rules = sorted(set(_rules(drawings)), key=lambda rule: rule[2])  # a rule drawn twice is one rule
    if not rules:
        return []
    words = list(words)
    tables: list[tuple[Box, Grid]] = []
    for x0, x1, y in rules:
        header_top = _header_top(words, x0, x1, y)
        if header_top is None or _running_head(words, header_top, y):
            continue
        below = [rule for rule in rules if rule[2] > y + 2 and rule[0] < x1 and x0 < rule[1]]
        groups = [rule_y for rule_x0, rule_x1, rule_y in below  # rules between groups of rows span the table too
                  if abs(rule_x0 - x0) <= SAME_EDGE and abs(rule_x1 - x1) <= SAME_EDGE]
        end = min((rule_y for _, _, rule_y in below if rule_y not in groups), default=float("inf"))
        lines = _steady_lines(words, x0, x1, y, end, groups)
        if len(lines) < MIN_HEADER_RULED_ROWS:
            continue
        columns = _columns([word for line in lines for word in line], x0, x1)
        lines = lines[:next((i for i, line in enumerate(lines) if None in _homes(line, columns)), len(lines))]
        if len(lines) < MIN_HEADER_RULED_ROWS:
            continue
        bbox = (x0, header_top, x1, max(word.box[3] for word in lines[-1]) + 1)
        if any(_overlaps(bbox, box) for box in [*taken, *(table[0] for table in tables)]):
            continue
        inside = [word for word in words if centre_in(word.box, bbox)]
        columns = _unheaded_marks_joined(columns, inside, y, lines)
        if not _headed(inside, y, columns):
            continue
        grid = text_grid(words, bbox, header_bottom=y, need_figures=False, columns=columns)
        if grid:
            tables.append((bbox, grid))
    return tables


def _unheaded_marks_joined(columns: list[tuple[float, float]], inside: list[RawWord], header_bottom: float,
                           lines: list[list[RawWord]]) -> list[tuple[float, float]]:
    """The columns with each one that has no heading over it and holds words in fewer than half the lines (a "†"
    after some option names) joined to the column on its left."""
    header = [word for word in inside if word.box[3] <= header_bottom + 1]
    joined = columns[:1]
    for left, right in columns[1:]:
        headed = any(left <= (word.box[0] + word.box[2]) / 2 < right for word in header)
        filled = sum(1 for line in lines if any(left <= (word.box[0] + word.box[2]) / 2 < right for word in line))
        if not headed and filled * 2 < len(lines):
            joined[-1] = (joined[-1][0], right)
        else:
            joined.append((left, right))
    return joined


def _running_head(words: list[RawWord], header_top: float, rule_y: float) -> bool:
    """Whether the line over a rule is a running head: the page's first line, with the page number as a word of its
    own ("12  第二章 入门"). A table continued at the top of a page has its headings there, but no bare number."""
    if any(word.box[3] <= header_top for word in words):
        return False
    return any(header_top <= word.box[1] and word.box[3] <= rule_y + RULE_TOUCH and word.text.isdigit()
               for word in words)


def _steady_lines(words: list[RawWord], x0: float, x1: float, top: float, bottom: float,
                  group_rules: Sequence[float] = ()) -> list[list[RawWord]]:
    """The text lines under ``top`` (and over ``bottom``) that lie within ``x0``..``x1`` and follow one another at a
    steady pitch: the first line that reaches outside, or comes after a gap of ``ROW_PITCH_BREAK`` pitches (twice
    that across one of the ``group_rules`` between groups of rows), ends them."""
    lines = text_lines([word for word in words if top - 1 <= word.box[1] and word.box[3] <= bottom + 1])
    steady: list[list[RawWord]] = []
    for line in lines:
        if min(word.box[0] for word in line) < x0 - 2 or max(word.box[2] for word in line) > x1 + 2:
            break
        if len(steady) >= 2:
            centres = [word_middle(row[0]) for row in steady]
            pitch = sorted(b - a for a, b in zip(centres, centres[1:]))[(len(centres) - 1) // 2]
            ruled = any(centres[-1] < rule_y < word_middle(line[0]) for rule_y in group_rules)
            if word_middle(line[0]) - centres[-1] > ROW_PITCH_BREAK * pitch * (2 if ruled else 1):
                break
        steady.append(line)
    return steady

"""Tables drawn with horizontal rules only (LaTeX's booktabs), which ``page.find_tables()`` misses.

Papers set their results tables between a top rule, one or more mid rules and a bottom rule, with no
vertical lines and no rule between rows. Three or more rules of the same width, stacked closer than
``MAX_RULE_GAP``, mark such a table; its rows are the text lines between the top and bottom rule, and
its columns are the gaps in x that no word of a multi-cell row covers (a row of one run of words, such as
"Baselines without retrieval", spans the table and is left out of that count). Without a caption only
tables of figures are taken: some column right of the labels must hold mostly numbers, which keeps
algorithm boxes and ruled text out. A table of text (prompts, definitions) is taken with a "Table N"
caption right over or under its rules. None is taken with curves or slanted strokes between its rules (a
chart's frame and axis labels). A caption line between two rules of a stack cuts it (two tables of one width,
one under the other), and a caption nearer a table found already, which has no other label, is that table's.
Lines of wrapped text join the row they continue (``rag.ingest.table_wraps``), and the grid goes to the same cell
placement as PyMuPDF's tables (``tables._cut_out``). A table with a mid rule and a bottom rule but no top rule
(``mid_rule_tables``) takes the line over its first rule as its header, beside a caption only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pymupdf

from rag.ingest.pdf_layout import RawWord
from rag.ingest.table_caption import label_within_reach, labelled_elsewhere, nearer_elsewhere
from rag.ingest.table_grid import RULE_TOUCH, Box, Grid, centre_in, merge_runs, text_lines, word_middle
from rag.ingest.table_wraps import is_figure_word, join_wrapped_rows

MIN_RULE_WIDTH = 60.0  # points; shorter strokes are underlines or dashes
SAME_EDGE = 1.5  # points; rules of one table start and end together
MAX_RULE_GAP = 260.0  # points between consecutive rules of one table
MAX_PLOT_STROKES = 4  # curves or slanted lines inside the rules: a chart
MIN_FIGURE_SHARE = 0.5  # of the words in a column of figures ("1 所" is half a figure)
SPAN_GAP = 1.0  # points between two columns that no row bridges
SPACE_GAP_HEIGHTS = 0.6  # a typewriter space is about half a line high; two columns stand a line height apart or more


def rule_tables(drawings: list[dict], words: Iterable[RawWord], *, taken: list[Box],
                captions: Sequence[Box] = ()) -> list[tuple[Box, Grid]]:
    """(bbox, grid) of each table between horizontal rules, outside the boxes in ``taken``: a table of
    figures, or any table with a "Table N" caption line right under its bottom rule or over its top rule.

    Args:
        drawings: The page's ``get_cdrawings()``.
        words: The page's words; read only when the page has a stack of rules.
        taken: Tables already found on the page.
        captions: Boxes of the page's "Table N" caption lines. Defaults to none.
    """
    groups = _rule_groups(drawings)
    # A long table of text (a list of methods over a page) leaves a wider gap between its rules; such a
    # stack is a table only beside its caption.
    long_groups = [group for group in _rule_groups(drawings, max_gap=float("inf")) if group not in groups]
    if not groups and not long_groups:
        return []
    words = list(words)
    # a long stack, or a part of a stack cut at a caption, is a table only beside a caption of its own
    stacks = [(stack, cut) for group in groups for stack, cut in _split_at_captions(group, captions)]
    stacks += [(stack, True) for group in long_groups for stack, _ in _split_at_captions(group, captions)]
    return _tables_in(stacks, words, drawings, taken=taken, captions=captions)


def mid_rule_tables(drawings: list[dict], words: Iterable[RawWord], *, taken: list[Box],
                    captions: Sequence[Box]) -> list[tuple[Box, Grid]]:
    """Tables set with a mid rule under the header line and a bottom rule, but no top rule (lua-physical's), each
    beside its caption; looked for after the other kinds, outside the boxes in ``taken``, since a table of aligned
    text under its caption (``rag.ingest.caption_tables``) reads its wrapped cells better where both see it."""
    if not captions:
        return []  # most pages: spare them another pass over the drawings
    pairs = [group for group in _rule_groups(drawings, max_gap=float("inf"), min_rules=2) if len(group[2]) == 2]
    if not pairs:
        return []
    words = list(words)
    stacks = [((x0, x1, [header_top, *ys]), True) for x0, x1, ys in pairs
              for header_top in [_header_top(words, x0, x1, ys[0])] if header_top is not None]
    return _tables_in(stacks, words, drawings, taken=taken, captions=captions)


def _tables_in(stacks: list[tuple[tuple[float, float, list[float]], bool]], words: list[RawWord],
               drawings: list[dict], *, taken: list[Box], captions: Sequence[Box]) -> list[tuple[Box, Grid]]:
    """(bbox, grid) of each stack of rules (with whether it needs a caption) that holds a table."""
    strokes = _plot_strokes(drawings)
    tables: list[tuple[Box, Grid]] = []
    for (x0, x1, ys), needs_caption in sorted(stacks, key=lambda stack: stack[1]):  # whole stacks claim captions first
        bbox = (x0, ys[0], x1, ys[-1])
        others = [*taken, *(table[0] for table in tables)]
        if any(_overlaps(bbox, box) for box in others):
            continue
        captioned = _captioned(bbox, [box for box in captions if not _claimed(box, bbox, others, captions)])
        if needs_caption and not captioned:
            continue
        if sum(1 for x, y in strokes if bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]) >= MAX_PLOT_STROKES:
            continue
        # a header line over each column stands in for a caption only between a top, a mid and a bottom rule:
        # boxes of code and a captioned table's later sections stack more rules
        grid = text_grid(words, bbox, header_bottom=ys[1], need_figures=not captioned, headed=len(ys) == 3)
        if grid:
            tables.append((bbox, grid))
    return tables


def text_grid(words: list[RawWord], bbox: Box, *, header_bottom: float, need_figures: bool,
              headed: bool = False, columns: list[tuple[float, float]] | None = None) -> Grid | None:
    """The grid of a table without drawn columns: a row per text line (wrapped lines joined), columns at the gaps its
    body (below ``header_bottom``) leaves unless given; None for fewer than two columns or rows, or, with
    ``need_figures``, without a column of figures (or, where ``headed`` allows it, a heading over each column)."""
    inside = [word for word in words if centre_in(word.box, bbox)]
    body = [word for word in inside if word.box[1] >= header_bottom - 1]
    columns = columns or _columns(body, bbox[0], bbox[2])
    if len(columns) < 2:
        return None
    qualifies = (not need_figures or _has_figure_column(body, columns)
                 or (headed and _headed(inside, header_bottom, columns)))
    if not qualifies:
        return None
    rows = join_wrapped_rows(_rows(inside, bbox[1], bbox[3]), columns, inside)
    if len(rows) < 2:
        return None
    return [[(left, top, right, bottom) for left, right in columns] for top, bottom in rows]


def has_ruling(drawings: list[dict]) -> bool:
    """Whether a page's drawings (``page.get_cdrawings()``) hold enough straight lines for a table of two
    rows (three rules across).

    ``find_tables`` looks for tables in ruling lines and costs ~0.1-0.3 s a page (it rebuilds every
    character in Python); this check reads only the drawings (~2 ms) and spares it most pages of
    papers, which have no ruled tables at all.
    """
    across: set[int] = set()
    down: set[int] = set()
    for path in drawings:
        for item in path["items"]:
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y0 - y1) < 1 and abs(x1 - x0) > 5:
                    across.add(round(y0))
                elif abs(x0 - x1) < 1 and abs(y1 - y0) > 5:
                    down.add(round(x0))
            elif item[0] in ("re", "qu"):
                rect = pymupdf.Rect(item[1]) if item[0] == "re" else pymupdf.Quad(item[1]).rect
                if rect.width > 5:
                    across.update((round(rect.y0), round(rect.y1)))
                if rect.height > 5:
                    down.update((round(rect.x0), round(rect.x1)))
    # either orientation: drawings of a rotated page are in unrotated coordinates
    return (len(across) >= 3 and len(down) >= 1) or (len(down) >= 3 and len(across) >= 1)


def _header_top(words: list[RawWord], x0: float, x1: float, rule: float) -> float | None:
    """The top of the line of two or more cells set right over ``rule`` within its ends (None if there is none)."""
    over = [word for word in words if x0 - 1 <= word.box[0] and word.box[2] <= x1 + 1
            and -RULE_TOUCH <= rule - word.box[3] <= word.box[3] - word.box[1]]
    line = [word for word in over if word.box[3] >= max((w.box[3] for w in over), default=0) - 2]
    if len(merge_runs([(word.box[0], word.box[2]) for word in line])) < 2:
        return None
    return min(word.box[1] for word in line) - 1


def _rule_groups(drawings: list[dict], max_gap: float = MAX_RULE_GAP,
                 min_rules: int = 3) -> list[tuple[float, float, list[float]]]:
    """Stacks of ``min_rules`` or more horizontal rules sharing their ends, none more than ``max_gap`` below the
    one above: (x0, x1, the rules' y, top down)."""
    stacks: list[tuple[float, float, list[float]]] = []  # rules sharing their ends, in any order
    for x0, x1, y in _rules(drawings):
        stack = next((stack for stack in stacks
                      if abs(stack[0] - x0) <= SAME_EDGE and abs(stack[1] - x1) <= SAME_EDGE), None)
        if stack is None:
            stacks.append((x0, x1, [y]))
        else:
            stack[2].append(y)
    groups: list[tuple[float, float, list[float]]] = []
    for x0, x1, ys in stacks:
        current: list[float] = []
        for y in sorted(ys):
            if current and y - current[-1] > max_gap:
                groups.append((x0, x1, current))
                current = []
            if not current or y - current[-1] > 2:  # a double rule is one rule
                current.append(y)
        groups.append((x0, x1, current))
    return [group for group in groups if len(group[2]) >= min_rules]


def _rules(drawings: list[dict]) -> list[tuple[float, float, float]]:
    """The page's horizontal rules at least ``MIN_RULE_WIDTH`` long: (x0, x1, y)."""
    rules: list[tuple[float, float, float]] = []
    for path in drawings:
        for item in path["items"]:
            if item[0] == "l":
                (ax, ay), (bx, by) = item[1], item[2]
                if abs(ay - by) < 1 and abs(bx - ax) >= MIN_RULE_WIDTH:
                    rules.append((min(ax, bx), max(ax, bx), (ay + by) / 2))
            elif item[0] == "re":
                rect = pymupdf.Rect(item[1])
                if rect.height < 2 and rect.width >= MIN_RULE_WIDTH:
                    rules.append((rect.x0, rect.x1, (rect.y0 + rect.y1) / 2))
    return rules


def _split_at_captions(group: tuple[float, float, list[float]],
                       captions: Sequence[Box]) -> list[tuple[tuple[float, float, list[float]], bool]]:
    """A stack of rules cut where a caption line sits between two of its rules, each part with whether it was cut:
    two booktabs tables of one width set one under the other (fduthesis' 表6 and 表7) share their rules' ends, so
    their rules made one stack. Parts of fewer than three rules go."""
    x0, x1, ys = group
    parts: list[list[float]] = [[ys[0]]]
    for upper, lower in zip(ys, ys[1:]):
        if any(box[0] < x1 and x0 < box[2] and upper + RULE_TOUCH < (box[1] + box[3]) / 2 < lower - RULE_TOUCH
               for box in captions):
            parts.append([])
        parts[-1].append(lower)
    return [((x0, x1, part), len(parts) > 1) for part in parts if len(part) >= 3]


def _captioned(bbox: Box, captions: Sequence[Box]) -> bool:
    """Whether a caption line sits right under the rules or over them (its first line, a few lines up), and
    none between them (rules around a figure and a table at once)."""
    over = [box for box in captions if box[0] < bbox[2] and bbox[0] < box[2]]
    if any(bbox[1] + RULE_TOUCH < box[1] < bbox[3] - RULE_TOUCH for box in over):
        return False
    return any(label_within_reach(bbox, box) for box in over)


def _claimed(caption: Box, bbox: Box, others: list[Box], captions: Sequence[Box]) -> bool:
    """Whether a table found already, with no other label, is nearer the caption than ``bbox``: "Table 1.5" under its
    own table is not the caption of a code box further down."""
    return nearer_elsewhere(caption, bbox, [box for box in others if not labelled_elsewhere(box, caption, captions)])


def _plot_strokes(drawings: list[dict]) -> list[tuple[float, float]]:
    """Midpoints of the curves and slanted lines a chart is drawn with; a table has none."""
    points = []
    for path in drawings:
        for item in path["items"]:
            if item[0] == "c" or (item[0] == "l" and abs(item[1][0] - item[2][0]) > 1
                                  and abs(item[1][1] - item[2][1]) > 1):
                points.append(((item[1][0] + item[-1][0]) / 2, (item[1][1] + item[-1][1]) / 2))
    return points


def _columns(body: list[RawWord], x0: float, x1: float) -> list[tuple[float, float]]:
    """Column spans: runs of x covered by the words of rows with two or more cells, split at gaps.

    Only rows with more than half as many cells as the fullest row count: a heading spanning several columns
    ("Long-form generations (with citations)" over four metrics) would otherwise bridge their gaps and merge them.
    """
    lines = [merge_runs([(word.box[0], word.box[2]) for word in line]) for line in text_lines(body)]
    fullest = max((len(runs) for runs in lines), default=0)
    covered = [run for runs in lines if len(runs) >= 2 and len(runs) > fullest / 2 for run in runs]
    # no row's cell crosses a gap between the spans, however narrow: a packed table of centred names leaves 2 points
    spans = _join_spaced(merge_runs(covered, min_gap=SPAN_GAP), text_lines(body))
    full = [runs for runs in lines if len(runs) == fullest]
    if len(spans) < 2 and fullest >= 2 and len(full) * 2 >= len(lines):
        # a few cells set flush against the next column ("\apjlett ApJ", 1.8 points apart) bridged every gap;
        # the rows that hold all the columns, most of the table, still show where they are
        spans = _join_spaced(merge_runs([run for runs in full for run in runs], min_gap=SPAN_GAP), text_lines(body))
    if len(spans) < 2:
        return []
    edges = [x0] + [(left[1] + right[0]) / 2 for left, right in zip(spans, spans[1:])] + [x1]
    return list(zip(edges, edges[1:]))


def _join_spaced(spans: list[tuple[float, float]], lines: list[list[RawWord]]) -> list[tuple[float, float]]:
    """Neighbouring spans that every row holding both sets one space apart are one column: code in a typewriter
    font ("vcovCL(m, cluster = id)") aligns its words from row to row, and its spaces are wider than a cell gap
    between two words of proportional type, but far narrower than the gap between two columns."""
    def words_in(line: list[RawWord], span: tuple[float, float]) -> list[RawWord]:
        return [word for word in line if span[0] <= (word.box[0] + word.box[2]) / 2 <= span[1]]

    joined = spans[:1]
    for span in spans[1:]:
        gaps = [(min(word.box[0] for word in right) - max(word.box[2] for word in left))
                / max(word.box[3] - word.box[1] for word in line)
                for line in lines for left, right in [(words_in(line, joined[-1]), words_in(line, span))]
                if left and right]
        if gaps and max(gaps) < SPACE_GAP_HEIGHTS:
            joined[-1] = (joined[-1][0], span[1])
        else:
            joined.append(span)
    return joined


def _rows(words: list[RawWord], top: float, bottom: float) -> list[tuple[float, float]]:
    """Each text line's band, from halfway to the line above to halfway to the line below."""
    centres = [word_middle(line[0]) for line in text_lines(words)]
    edges = [top] + [(upper + lower) / 2 for upper, lower in zip(centres, centres[1:])] + [bottom]
    return list(zip(edges, edges[1:]))


def _has_figure_column(body: list[RawWord], columns: list[tuple[float, float]]) -> bool:
    """Whether a column right of the labels holds mostly figures (results beside citations and names)."""
    for left, right in columns[1:]:
        texts = [word.text for word in body if left <= (word.box[0] + word.box[2]) / 2 < right]
        figures = sum(1 for text in texts if is_figure_word(text))
        if figures >= 2 and figures >= MIN_FIGURE_SHARE * len(texts):
            return True
    return False


def _headed(inside: list[RawWord], header_bottom: float, columns: list[tuple[float, float]]) -> bool:
    """Whether the band over the first mid rule is one line holding a heading over each column and nothing across
    two: a manual's uncaptioned table of commands ("用途 | 命令") is headed so, while an algorithm box or a
    prompt set between rules has a single title over its text."""
    header = text_lines([word for word in inside if word.box[3] <= header_bottom + 1])
    if len(header) != 1:
        return False
    if _homes(header[0], columns) != list(range(len(columns))):  # one run under each column, none across two
        return False
    # prose between two boxes of code runs across the columns its commands seem to make
    return all(None not in _homes(line, columns) for line in text_lines(inside) if line not in header)


def _homes(line: list[RawWord], columns: list[tuple[float, float]]) -> list[int | None]:
    """The column holding each run of a line's words, left to right (None for a run across a column edge)."""
    return [next((i for i, (left, right) in enumerate(columns) if left <= run[0] and run[1] <= right), None)
            for run in merge_runs([(word.box[0], word.box[2]) for word in line])]


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

"""What the embedder reads for a table chunk: an outline of its words, not the Markdown grid.

A table chunk is stored and shown as Markdown (caption, header row, one line per row), but that grid
is a poor text to embed: every number splits into several word pieces ("39,608,340,979.04" is a dozen),
every "|" is one more, and the embedders read a fixed window (MiniLM 256 pieces), so the row labels
near the bottom of a financial table never reach the vector at all. Questions ask about a row by its
label and a column by its period, never by the figure they want, so the outline keeps the words and
drops the figures (but not the header's years): the chunk's context (document title, section heading), the caption, the header
cells, then each row's text cells, one row per line.

Filings head a quarter's columns "Three Months Ended March 31," over "2021 | 2022" while people ask
about "the first quarter of 2022" or "Q1 2022", words no cell holds; ``period_names`` spells the
columns the way they are asked about (for the outline and for BM25).

The outline is only ever embedded. BM25 indexes the Markdown itself (``rag.index.keywords``), and what
is stored, cited and highlighted stays the Markdown block.
"""

from __future__ import annotations

import re

_NUMERIC_CELL_RE = re.compile(r"[\s$€£¥￥()（）+\-–—−,.:%％\d*]*")
_SEPARATOR_RE = re.compile(r"\|(\s*:?-{3,}:?\s*\|)+")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
_YEAR_RE = re.compile(r"(?<!\d)(19\d\d|20\d\d)(?!\d)")
# "Three Months Ended March 31" / "Six Months Ended June 30, 2022" / "Quarter Ended September 30":
# the period a column covers, when it ends on a calendar quarter's last day
_PERIOD_RE = re.compile(
    r"\b(three|six|nine|3|6|9)[\s-]+months?\s+ended\s+(march\s+31|june\s+30|september\s+30|december\s+31)"
    r"|\bquarters?\s+ended\s+(march\s+31|june\s+30|september\s+30|december\s+31)", re.IGNORECASE)
_QUARTER_OF_MONTH = {"march": 1, "june": 2, "september": 3, "december": 4}
_ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth"}
_SPAN_MONTHS = {"three": 3, "3": 3, "six": 6, "6": 6, "nine": 9, "9": 9}


def split_markdown_table(text: str) -> tuple[list[str], list[list[str]]]:
    """(caption lines, rows of cells) of a Markdown table block; the header is the first row.

    Args:
        text: A table chunk's text: caption lines, then ``| a | b |`` rows and one ``| --- |`` line.
    """
    caption: list[str] = []
    rows: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("|"):
            if _SEPARATOR_RE.fullmatch(stripped.replace(" ", "")) or _SEPARATOR_RE.fullmatch(stripped):
                continue
            cells = _CELL_SPLIT_RE.split(stripped.strip("|"))
            rows.append([cell.strip().replace("\\|", "|") for cell in cells])
        elif not rows:
            caption.append(stripped)
        else:  # a row cut at the chunk size continues on a line of its own
            rows[-1][-1] = f"{rows[-1][-1]} {stripped}".strip()
    return caption, rows


def is_figure(cell: str) -> bool:
    """Whether a cell holds only a figure ("$ 1,263", "(482)", "-13.23%", "—") or nothing."""
    return bool(_NUMERIC_CELL_RE.fullmatch(cell))


def table_outline(text: str, *, context: str = "") -> str:
    """The words of a table chunk for the embedder: context, caption, header and row labels.

    Falls back to ``text`` itself when it holds no Markdown rows (a table cut mid-row).

    Args:
        text: The table chunk's Markdown.
        context: Words that situate the table (document title, section heading). Defaults to none.
    """
    caption, rows = split_markdown_table(text)
    if not rows:
        return "\n".join(part for part in (context, text) if part)
    lines = [context] if context else []
    lines += caption
    for number, row in enumerate(rows):
        # the header's years ("2021 | 2022") are words here: questions name the period they ask about
        words = [cell for cell in row if cell and (number == 0 or not is_figure(cell))]
        if words:
            lines.append(" | ".join(words))
        names = period_names(caption, row) if number == 0 else []
        if names:
            lines.append(" | ".join(names))
    return "\n".join(lines)


def period_names(caption: list[str], header: list[str]) -> list[str]:
    """How people name the periods of a table's columns: "first quarter 2022 Q1 2022", one per year.

    Assumes the fiscal year is the calendar year: three months ended March 31 are the first quarter,
    June 30 the second, and so on; six months ended June 30 are the first half, nine months ended
    September 30 the first nine months. A company whose fiscal year ends elsewhere (Apple's "three
    months ended December 28") names its quarters differently; a period not ending on a calendar
    quarter's last day gets no name. The years are those the caption and header print.

    Args:
        caption: The caption lines (the period phrase is usually printed above the years).
        header: The header row's cells.
    """
    text = " ".join([*caption, *header])
    match = _PERIOD_RE.search(text)
    if not match:
        return []
    month = (match.group(2) or match.group(3)).split()[0].lower()
    quarter = _QUARTER_OF_MONTH[month]
    span = _SPAN_MONTHS.get((match.group(1) or "three").lower(), 3)
    if span == 3:
        words = [f"{_ORDINAL[quarter]} quarter {{}}", f"Q{quarter} {{}}"]
    elif span == 6 and quarter == 2:
        words = ["first half {}", "H1 {}", "first six months {}"]
    elif span == 9 and quarter == 3:
        words = ["first nine months {}"]
    else:
        return []
    years = list(dict.fromkeys(_YEAR_RE.findall(text)))
    return [" ".join(word.format(year) for word in words) for year in years]


def table_period_words(text: str) -> str:
    """``period_names`` of a table chunk's Markdown, on one line ("" when it names no period).

    Args:
        text: The table chunk's Markdown.
    """
    caption, rows = split_markdown_table(text)
    return " | ".join(period_names(caption, rows[0] if rows else []))

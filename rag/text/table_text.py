"""What the embedder reads for a table chunk: an outline of its words, not the Markdown grid.

A table chunk is stored and shown as Markdown (caption, header row, one line per row), but that grid
is a poor text to embed: every number splits into several word pieces ("39,608,340,979.04" is a dozen),
every "|" is one more, and the embedders read a fixed window (MiniLM 256 pieces), so the row labels
near the bottom of a financial table never reach the vector at all. Questions ask about a row by its
label and a column by its period, never by the figure they want, so the outline keeps the words and
drops the figures (but not the header's years): the chunk's context (document title, section heading), the caption, the header
cells, then each row's text cells, one row per line.

The outline is only ever embedded. BM25 indexes the Markdown itself (``rag.index.keywords``), and what
is stored, cited and highlighted stays the Markdown block.
"""

from __future__ import annotations

import re

_NUMERIC_CELL_RE = re.compile(r"[\s$€£¥￥()（）+\-–—−,.:%％\d*]*")
_SEPARATOR_RE = re.compile(r"\|(\s*:?-{3,}:?\s*\|)+")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")


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
    return "\n".join(lines)

"""A table continued from the page before is searched by that table's caption and header.

Statements in annual reports and filings run over several pages, and PyMuPDF finds one table per page:
the part on the second page has no title of its own (only the running header, "河北建新化工股份有限公司2019
年年度报告全文", sits above it) and no header row (its first row is a row of figures). Its rows were found by
nothing that says which statement they belong to, so a question about the parent company's own income
statement (母公司利润表) or about a row on the statement's second page reached them only by their row
labels, which the other statements repeat. When a page's first table follows straight on from the previous
page's last table (nothing but running headers, footers and page numbers between them, the same number of
columns, and no title of its own), it inherits that table's caption and header row as search context —
chained, so the third page of a statement still carries its title. What is stored, shown and cited stays the
page's own table.

A program's printout breaks over pages the same way: Sweave sets the command at the foot of one page ("R>
summary(fit.gaus)") and its output at the top of the next, where the printout's tables are captioned only by the
output's own title ("Coefficients:"), and the same title heads every other fit's printout. A page's tables above its
first prompt line, when the page before ends with a command, inherit that command as search context.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

from rag.documents import ParsedDocument
from rag.text.table_captions import COMMAND_LINE_RE
from rag.text.table_text import split_markdown_table

RUNNING_SHARE = 0.3  # a line printed on at least this share of a document's pages is a running header or footer
MIN_RUNNING_PAGES = 3
_DIGITS_RE = re.compile(r"\d+")
MAX_COMMAND_LINES = 8  # how far up from the foot of a page its last command may be (its output below it)
_SPACE_RE = re.compile(r"\s+")


class _Seen(NamedTuple):
    """The last table seen, as the next page's first table needs it."""

    page: int  # index into doc.pages
    text_after: str  # the page's text below the table
    columns: int
    title: str  # what it is searched by: its caption and header, or those it inherited
    continues: bool  # whether it continues a table from the page before


def continued_contexts(doc: ParsedDocument) -> dict[int, str]:
    """Search context inherited by each table that continues one from the page before, or a printout whose
    command ended the page before, keyed by where the table starts in ``doc.full_text``.

    Args:
        doc: The parsed document (its pages' text and table spans).
    """
    running = running_lines(doc)
    inherited: dict[int, str] = {}
    previous: _Seen | None = None
    for index, (page, offset) in enumerate(zip(doc.pages, doc.page_offsets())):
        # tables that start no later than the page's first prompt line (a printout's output, or one captioned by that
        # line) inherit the command that ended the page before
        command = _closing_command(doc.pages[index - 1].text, running) if index and page.tables else ""
        first_prompt = COMMAND_LINE_RE.search(page.text)
        commanded_until = first_prompt.start() if first_prompt else len(page.text)
        for number, table in enumerate(page.tables):
            caption, rows = split_markdown_table(page.text[table.start:table.end])
            own = [line for line in caption if _key(line) not in running]
            columns = len(rows[0]) if rows else -1
            if table.part > 1 and previous is not None and previous.page == index:
                title, continues = previous.title, previous.continues  # a later part of the same table: as its first
            elif (number == 0 and previous is not None and previous.page == index - 1 and not own and rows
                    and _only_running(page.text[:table.start], running)
                    and _only_running(previous.text_after, running) and columns == previous.columns):
                title, continues = previous.title, True
            else:
                header = [" | ".join(cell for cell in rows[0] if cell)] if rows and any(rows[0]) else []
                title, continues = "\n".join([*own, *header]), False
            if continues:
                inherited[offset + table.start] = title
            elif command and table.start <= commanded_until:
                inherited[offset + table.start] = command
            previous = _Seen(index, page.text[table.end:], columns, title, continues)
    return inherited


def _closing_command(text: str, running: set[str]) -> str:
    """The last command among a page's last lines (its prompt line and the "+" lines continuing it; running lines
    and page numbers aside), or "" when the page ends otherwise. What follows the command on the page is its output,
    which the next page's tables continue."""
    lines = [line for line in text.splitlines() if line.strip() and not _only_running(line, running)]
    for start in range(len(lines) - 1, max(len(lines) - 1 - MAX_COMMAND_LINES, -1), -1):
        if COMMAND_LINE_RE.match(lines[start]):
            end = start + 1
            while end < len(lines) and lines[end].startswith("+"):
                end += 1
            return "\n".join(lines[start:end])
    return ""


def running_lines(doc: ParsedDocument) -> set[str]:
    """Lines (digits aside, spaces ignored) printed on many pages: running headers, footers, page numbers."""
    counts: Counter[str] = Counter()
    for page in doc.pages:
        counts.update({_key(line) for line in page.text.splitlines() if line.strip()})
    floor = max(MIN_RUNNING_PAGES, RUNNING_SHARE * len(doc.pages))
    return {line for line, count in counts.items() if count >= floor}


def _key(line: str) -> str:
    return _DIGITS_RE.sub("#", _SPACE_RE.sub("", line))


def _only_running(text: str, running: set[str]) -> bool:
    """Whether ``text`` holds nothing but running lines and page numbers."""
    return all(_key(line) in running or not _DIGITS_RE.sub("", line).strip(" -–—/|页第共")
               for line in text.splitlines() if line.strip())

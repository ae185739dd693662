"""What the parser makes of a one-page PDF a test draws: its tables' text and the running text without them."""

from __future__ import annotations

from pathlib import Path

from rag.ingest.parse import parse_file


def tables_and_running_text(path: Path) -> tuple[list[str], str]:
    """(the text of each table on the PDF's first page, that page's text with the tables cut out)."""
    page = parse_file(path).pages[0]
    tables = [page.text[table.start:table.end] for table in page.tables]
    running = page.text
    for table in page.tables[::-1]:
        running = running[:table.start] + running[table.end:]
    return tables, running

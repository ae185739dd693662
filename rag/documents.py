"""Plain data that flows from parsing through chunking into the store.

These are the boundary types of ingestion: parsers produce ``ParsedDocument``, chunkers produce
``Chunk``, the store persists both. They are dataclasses, not llama-index nodes, so that parsing and
chunking can be tested without any model; ``Chunk.to_node()`` bridges into llama-index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import TextNode

# x0, y0, x1, y1 in PDF points, origin top-left (PyMuPDF's convention)
Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Word:
    """One word on a page and where its characters sit in ``Page.text``."""

    text: str
    box: Box
    start: int
    end: int


@dataclass(frozen=True)
class TableSpan:
    """A table (or one part of a split table) written into ``Page.text`` as a Markdown block."""

    start: int  # offsets into Page.text
    end: int
    caption: str = ""
    rows: int = 0  # body rows in this part
    part: int = 1
    parts: int = 1


@dataclass
class Page:
    number: int  # 1-based
    text: str
    words: list[Word] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    ocr: bool = False  # the text came from Tesseract, not from the PDF's text layer
    tables: list[TableSpan] = field(default_factory=list)


@dataclass
class Section:
    """A heading detected in the document, with the character offset where it starts."""

    title: str
    level: int
    page: int
    offset: int  # offset into ParsedDocument.full_text


@dataclass
class ParsedDocument:
    file_name: str
    file_type: str  # pdf, docx, md, html, txt
    pages: list[Page]
    sections: list[Section] = field(default_factory=list)
    title: str = ""
    # what a page lost and why (OCR or table extraction failed, a limit was reached): shown to the user
    notes: list[str] = field(default_factory=list)
    ocr_languages: str = ""  # Tesseract languages used, when any page was OCR'd

    @property
    def separator(self) -> str:
        return "\n\n"

    @property
    def full_text(self) -> str:
        return self.separator.join(page.text for page in self.pages)

    def page_offsets(self) -> list[int]:
        """Start offset of each page's text inside ``full_text``."""
        offsets, position = [], 0
        for page in self.pages:
            offsets.append(position)
            position += len(page.text) + len(self.separator)
        return offsets

    def table_spans(self) -> list[tuple[int, int]]:
        """(start, end) of every table block inside ``full_text``, in order."""
        return [(offset + table.start, offset + table.end)
                for page, offset in zip(self.pages, self.page_offsets()) for table in page.tables]

    @property
    def ocr_pages(self) -> list[int]:
        return [page.number for page in self.pages if page.ocr]


@dataclass
class Chunk:
    chunk_id: str
    doc_id: str
    file_name: str
    text: str
    index: int
    page_start: int
    page_end: int
    char_start: int  # offset into the document's full_text
    char_end: int
    language: str = "en"
    heading_path: str = ""
    parent_id: str = ""
    parent_text: str = ""  # parent_child strategy: the wider passage given to the LLM
    kind: str = "text"  # "table": a Markdown table block (caption, header row, body rows)
    context: str = ""  # searched, never shown: a table's document title (its cells do not name the company)

    def metadata(self) -> dict[str, Any]:
        """Flat metadata as Chroma stores it (str, int, float, bool only)."""
        # not dataclasses.asdict: its deep copy costs milliseconds per query on the hot path
        return {name: getattr(self, name) for name in _CHUNK_METADATA_FIELDS}

    def to_node(self, score_embedding: list[float] | None = None) -> TextNode:
        metadata = self.metadata()
        return TextNode(
            id_=self.chunk_id,
            text=self.text,
            metadata=metadata,
            embedding=score_embedding,
            excluded_embed_metadata_keys=list(metadata),
            excluded_llm_metadata_keys=list(metadata),
        )

    @classmethod
    def from_metadata(cls, text: str, metadata: dict[str, Any]) -> Chunk:
        known = {name for name in cls.__dataclass_fields__ if name != "text"}
        return cls(text=text, **{key: value for key, value in metadata.items() if key in known})


_CHUNK_METADATA_FIELDS = tuple(name for name in Chunk.__dataclass_fields__ if name != "text")


@dataclass(frozen=True)
class DocumentRecord:
    """A row of the document registry."""

    doc_id: str
    file_name: str
    sha256: str
    status: str  # pending, processing, completed, failed
    file_type: str = ""
    pages: int = 0
    chunks: int = 0
    language: str = ""
    error: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    stored_path: str = ""
    summary: str = ""
    keywords: str = ""  # comma separated
    topics: str = ""
    key_phrases: str = ""
    ocr_pages: str = ""  # pages read by OCR, as ranges: "1-3, 7"
    tables: int = 0  # table blocks indexed as their own chunks
    notes: str = ""  # one line per page that lost something, with the reason (see ParsedDocument.notes)


def page_ranges(numbers: list[int]) -> str:
    """"1-3, 7" for [1, 2, 3, 7]."""
    ranges: list[list[int]] = []
    for number in sorted(set(numbers)):
        if ranges and ranges[-1][1] == number - 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def parse_page_ranges(text: str) -> set[int]:
    """{1, 2, 3, 7} for "1-3, 7" (what ``page_ranges`` writes); unreadable parts are skipped."""
    pages: set[int] = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            pages.update(range(int(first), min(int(last or first), int(first) + 100_000) + 1))
    return pages

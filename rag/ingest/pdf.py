"""PDF pages to text whose every word knows its box, so citations can point back at the page.

``Page.text`` is built by us from PyMuPDF's word list rather than taken from ``get_text("text")``:
only then can each ``Word`` carry exact offsets into the text (``page.text[w.start:w.end] == w.text``).
Words of a line are joined by one space, lines by ``"\\n"`` and blocks by ``"\\n\\n"``. Two joins
differ on purpose, both keeping offsets exact:

* an English word hyphenated at a line end (``inter-`` / ``national``) is joined without the hyphen;
  the first ``Word`` then reads ``inter`` and keeps the box of ``inter-``;
* a Chinese line that wraps (it reaches the block's right edge and both sides are CJK) is joined
  without a newline, so ``布洛芬`` is not cut into ``布洛\\n芬``.

Word texts lose control characters, and Kangxi radicals that some fonts emit instead of ideographs
are folded to the ideographs, so ``Word.text`` can differ from what ``page.search_for`` matches.

Blocks keep MuPDF's native order (the content stream order), which follows the columns of
two-column papers; ``sort=True`` would interleave the columns line by line. Paragraphs that MuPDF
cut into one block per line are rejoined first (``rag.ingest.pdf_layout``).
"""

from __future__ import annotations

import logging
import re

import pymupdf

from rag.documents import Page, ParsedDocument, Section, Word
from rag.text.language import CJK_RE
from rag.ingest.parse_errors import CorruptFileError, EmptyDocumentError, EncryptedFileError, NoTextError
from rag.ingest.pdf_headings import LineInfo, detect_headings, first_page_title
from rag.ingest.pdf_layout import TEXT_FLAGS, is_hyphen_break, line_join, read_layout
from rag.ingest.progress import page_done

log = logging.getLogger(__name__)

_BAD_TITLE_RE = re.compile(r"^(untitled|microsoft (word|powerpoint)\b)|\.(docx?|pdf|tex|dvi|indd|pptx?|rtf)$",
                           re.IGNORECASE)


def parse_pdf(data: bytes, file_name: str) -> ParsedDocument:
    """Parse PDF bytes into pages with word boxes, sections and a title.

    Raises:
        CorruptFileError: the bytes cannot be opened, or were repaired into nothing readable.
        EncryptedFileError: a user password is required.
        EmptyDocumentError: the document has zero pages.
        NoTextError: no page has any text (scans and image-only PDFs; OCR is not supported).
    """
    pymupdf.TOOLS.mupdf_display_errors(False)  # we report problems ourselves, not on stderr
    try:
        pdf = pymupdf.open(stream=data, filetype="pdf")
    except (RuntimeError, ValueError) as exc:
        raise CorruptFileError(
            f"{file_name} is damaged and cannot be opened as a PDF (it may be truncated or corrupted)."
        ) from exc
    with pdf:
        if pdf.needs_pass:
            raise EncryptedFileError(
                f"{file_name} is password-protected; remove the password and upload it again.")
        if pdf.page_count == 0:
            if pdf.is_repaired:
                raise CorruptFileError(f"{file_name} is damaged: no readable pages could be recovered.")
            raise EmptyDocumentError(f"{file_name} has no pages.")
        pages, lines = _read_pages(pdf, file_name)
        if not any(page.text.strip() for page in pages):
            if pdf.is_repaired:
                raise CorruptFileError(
                    f"{file_name} is damaged (truncated or corrupted): no readable text could be recovered.")
            raise NoTextError(f"{file_name} has no extractable text — it may be a scanned/image-only PDF; "
                              "OCR is not supported.")
        if pdf.is_repaired:
            log.warning("%s: PDF structure was damaged and has been repaired; some content may be missing",
                        file_name)
        document = ParsedDocument(file_name=file_name, file_type="pdf", pages=pages)
        document.sections = _toc_sections(pdf, document) or detect_headings(document, lines)
        document.title = (_metadata_title(pdf) or first_page_title(lines)
                          or _first_heading(document.sections) or file_name)
    return document


def _read_pages(pdf: pymupdf.Document, file_name: str) -> tuple[list[Page], list[LineInfo]]:
    pages: list[Page] = []
    lines: list[LineInfo] = []
    for number, pdf_page in enumerate(pdf, start=1):
        try:
            page, page_lines = _read_page(pdf_page, number)
        except RuntimeError as exc:  # one broken content stream should not lose the whole file
            log.warning("%s: page %d could not be read (%s); it is left empty", file_name, number, exc)
            rect = pdf_page.rect
            page, page_lines = Page(number=number, text="", width=rect.width, height=rect.height), []
        pages.append(page)
        lines.extend(page_lines)
        page_done("parse", number, pdf.page_count)
    return pages, lines


def _read_page(pdf_page: pymupdf.Page, number: int) -> tuple[Page, list[LineInfo]]:
    textpage = pdf_page.get_textpage(flags=TEXT_FLAGS)
    blocks = read_layout(textpage)
    parts: list[str] = []
    words: list[Word] = []
    infos: list[LineInfo] = []
    position = 0

    def emit(text: str) -> None:
        nonlocal position
        parts.append(text)
        position += len(text)

    for block_index, block in enumerate(blocks):
        if block_index:
            emit("\n\n")
        right_edge = max(line.x1 for line in block)
        for line_index, line in enumerate(block):
            line_start = position
            following = block[line_index + 1] if line_index + 1 < len(block) else None
            for word_index, raw in enumerate(line.words):
                text = raw.text
                last = word_index == len(line.words) - 1
                if last and following and is_hyphen_break(text, following):
                    text = text[:-1]
                if word_index:
                    emit(" ")
                words.append(Word(text=text, box=raw.box, start=position, end=position + len(text)))
                emit(text)
            infos.append(LineInfo(page=number, start=line_start, end=position, size=line.size,
                                  bold=line.bold, block=block_index))
            if following:
                emit(line_join(line, following, right_edge))
    rect = pdf_page.rect
    page = Page(number=number, text="".join(parts), words=words, width=rect.width, height=rect.height)
    for info in infos:
        info.text = page.text[info.start:info.end]
    return page, infos


def _toc_sections(pdf: pymupdf.Document, document: ParsedDocument) -> list[Section]:
    """Sections from the PDF outline, each placed where its title appears on its page."""
    offsets = document.page_offsets()
    sections: list[Section] = []
    for level, title, page_number, *_ in pdf.get_toc(simple=True):
        title = " ".join(str(title).split())
        if not title or not 1 <= page_number <= len(document.pages):
            continue
        page_text = document.pages[page_number - 1].text
        floor = 0
        if sections and sections[-1].page == page_number:
            floor = sections[-1].offset - offsets[page_number - 1]
        local = _find_title(page_text, title, floor)
        sections.append(Section(title=title, level=max(1, int(level)), page=page_number,
                                offset=offsets[page_number - 1] + local))
    return sections


def _find_title(page_text: str, title: str, floor: int) -> int:
    """Offset of ``title`` in ``page_text`` (whitespace- and case-insensitive), else ``floor``."""
    tokens = title.split()
    if any(CJK_RE.search(token) for token in tokens):  # wrapped CJK titles may lose inner spaces
        pattern = r"\s*".join(re.escape(char) for char in "".join(tokens))
    else:
        pattern = r"\s+".join(re.escape(token) for token in tokens)
    regex = re.compile(pattern, re.IGNORECASE)
    match = regex.search(page_text, floor) or regex.search(page_text)
    return match.start() if match and match.start() >= floor else floor


def _metadata_title(pdf: pymupdf.Document) -> str:
    """The document-info title, unless it is a file name, an ID or a placeholder."""
    title = " ".join(str((pdf.metadata or {}).get("title") or "").split())
    if not title or _BAD_TITLE_RE.search(title) or not re.search(r"[^\W\d_]{2}", title):
        return ""
    return title


def _first_heading(sections: list[Section]) -> str:
    return sections[0].title if sections else ""

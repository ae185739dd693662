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

Pages are read by ``rag.ingest.pdf_pages``: tables become Markdown blocks (``rag.ingest.tables``) and
pages without a text layer are OCR'd (``rag.ingest.ocr``), each page falling back on its own with the
reason kept in ``ParsedDocument.notes``. This module handles the document: opening it, its limits,
its sections and its title.
"""

from __future__ import annotations

import logging
import re

import pymupdf

from rag.documents import ParsedDocument, Section
from rag.ingest.options import ParseOptions
from rag.ingest.parse_errors import (
    ContentLimitError,
    CorruptFileError,
    EmptyDocumentError,
    EncryptedFileError,
    NoTextError,
)
from rag.ingest.pdf_headings import detect_headings, first_page_title
from rag.ingest.pdf_pages import PdfPages, read_pages
from rag.text.language import CJK_RE

log = logging.getLogger(__name__)

TITLE_FONT_PAGES = 3  # pages whose fonts' names a metadata title is checked against
_BAD_TITLE_RE = re.compile(r"^(untitled|microsoft (word|powerpoint)\b)|\.(docx?|pdf|tex|dvi|indd|pptx?|rtf)$",
                           re.IGNORECASE)


def parse_pdf(data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
    """Parse PDF bytes into pages with word boxes, tables, sections and a title; OCR pages without text.

    Args:
        data: The PDF's bytes.
        file_name: Shown in every message.
        options: OCR, tables and content limits. Defaults to ``ParseOptions()``.

    Raises:
        CorruptFileError: the bytes cannot be opened, or were repaired into nothing readable.
        EncryptedFileError: a user password is required.
        EmptyDocumentError: the document has zero pages.
        ContentLimitError: more pages than ``options.max_pages``.
        NoTextError: no page has any text, even after OCR (the message says why OCR did not help).
    """
    options = options or ParseOptions()
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
        if pdf.page_count > options.max_pages:
            raise ContentLimitError(f"{file_name} has {pdf.page_count} pages, over the limit of {options.max_pages} "
                                    "(storage.max_pages); split it into smaller files.")
        read = read_pages(pdf, file_name, options)
        if not any(page.text.strip() for page in read.pages):
            if pdf.is_repaired:
                raise CorruptFileError(
                    f"{file_name} is damaged (truncated or corrupted): no readable text could be recovered.")
            raise NoTextError(_no_text_message(file_name, read))
        if pdf.is_repaired:
            log.warning("%s: PDF structure was damaged and has been repaired; some content may be missing",
                        file_name)
        document = ParsedDocument(file_name=file_name, file_type="pdf", pages=read.pages, notes=read.notes,
                                  ocr_languages=read.ocr_languages)
        document.sections = _toc_sections(pdf, document) or detect_headings(document, read.lines)
        document.title = (_metadata_title(pdf) or first_page_title(read.lines)
                          or _first_heading(document.sections) or file_name)
    return document


def _no_text_message(file_name: str, read: PdfPages) -> str:
    if read.ocr_error:
        return f"{file_name} has no text layer (a scanned/image-only PDF) and could not be OCR'd: {read.ocr_error}"
    if read.ocr_languages and all(page.ocr or not page.text for page in read.pages):
        return (f"{file_name} has no extractable text: it has no text layer, and OCR (Tesseract, "
                f"{read.ocr_languages}) found no text on its pages.")
    if read.notes:
        return f"{file_name} has no extractable text: {'; '.join(read.notes)}"
    return f"{file_name} has no extractable text (its pages are blank)."


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
    """The document-info title, unless it is a file name, an ID, a placeholder or a font's name."""
    title = " ".join(str((pdf.metadata or {}).get("title") or "").split())
    if not title or _BAD_TITLE_RE.search(title) or not re.search(r"[^\W\d_]{2}", title):
        return ""
    if title.casefold() in _font_names(pdf):
        return ""  # Ghostscript, re-distilling a TeX paper, leaves a font's name ("CMR10") as the document's title
    return title


def _font_names(pdf: pymupdf.Document) -> set[str]:
    """The base names of the fonts of the first pages, without a subset's "ABCDEF+" tag, case-folded."""
    names = set()
    for number in range(min(len(pdf), TITLE_FONT_PAGES)):
        try:
            fonts = pdf.get_page_fonts(number)
        except Exception:  # a broken font table costs the check, not the document
            continue
        names.update(str(font[3]).split("+", 1)[-1].casefold() for font in fonts)
    return names


def _first_heading(sections: list[Section]) -> str:
    return sections[0].title if sections else ""

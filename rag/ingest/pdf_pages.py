"""Read every page of a PDF: its text layer, its tables, and OCR where it has no text layer.

Each page degrades on its own: a page whose tables cannot be extracted keeps its plain text, a page
that OCR cannot read stays empty, a page beyond the OCR limit is skipped, and each time the reason is
added to the document's notes ("page 3: ..."), which the Documents page shows. One broken page never
fails the document.

``assemble`` writes a page's text from its blocks and tables: words of a line joined by their
``RawWord.join`` (one space, or nothing between OCR'd CJK characters), lines by ``line_join``, blocks
and tables by ``"\\n\\n"``; every ``Word`` knows its offsets (``page.text[w.start:w.end] == w.text``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import pymupdf

from rag.documents import Page, TableSpan, Word, page_ranges
from rag.ingest.ocr import (
    PROBE_LANGUAGES,
    OcrUnavailableError,
    find_tessdata,
    needs_ocr,
    ocr_layout,
    ocr_textpage,
    probe_script,
    require_languages,
    script_of,
)
from rag.ingest.options import ParseOptions
from rag.ingest.pdf_headings import LineInfo
from rag.ingest.pdf_layout import TEXT_FLAGS, RawLine, is_hyphen_break, line_join, read_layout
from rag.ingest.progress import page_done
from rag.ingest.tables import Item, TableBlock, find_tables

logger = logging.getLogger(__name__)


@dataclass
class PdfPages:
    pages: list[Page]
    lines: list[LineInfo]
    notes: list[str] = field(default_factory=list)
    ocr_languages: str = ""
    ocr_error: str = ""  # why OCR could not run at all (no language data), when a page needed it


def read_pages(pdf: pymupdf.Document, file_name: str, options: ParseOptions) -> PdfPages:
    """Every page as a ``Page``: text layer and tables first, then OCR for pages without text."""
    result = PdfPages(pages=[], lines=[])
    scanned: list[int] = []
    for index, pdf_page in enumerate(pdf):
        number = index + 1
        try:
            page, lines = _text_layer(pdf_page, number, options, result.notes)
        except RuntimeError as exc:  # one broken content stream should not lose the whole file
            logger.warning("%s: page %d could not be read (%s); it is left empty", file_name, number, exc)
            result.notes.append(f"page {number}: could not be read ({exc}); it is left empty")
            page, lines = _empty(pdf_page, number), []
        if needs_ocr(pdf_page, page.text):
            scanned.append(index)
        result.pages.append(page)
        result.lines.extend(lines)
        # table detection is most of a page's time when it is on: the stage says which pass this is
        page_done("tables" if options.tables else "parse", number, pdf.page_count)
    if scanned:
        _ocr_pages(pdf, scanned, options, result, file_name)
    return result


def _text_layer(pdf_page: pymupdf.Page, number: int, options: ParseOptions,
                notes: list[str]) -> tuple[Page, list[LineInfo]]:
    blocks = read_layout(pdf_page.get_textpage(flags=TEXT_FLAGS))
    items: list[Item] = list(blocks)
    if options.tables and blocks:
        try:
            items = find_tables(pdf_page, blocks)
        except Exception as exc:  # noqa: BLE001 - PyMuPDF's table finder can fail on odd drawings
            logger.warning("page %d: table extraction failed (%s: %s)", number, type(exc).__name__, exc)
            notes.append(f"page {number}: table extraction failed ({type(exc).__name__}: {exc}); "
                         "its tables are kept as plain text")
            items = list(blocks)
    return assemble(items, number, pdf_page.rect, table_max_tokens=options.table_max_tokens)


def _ocr_pages(pdf: pymupdf.Document, scanned: list[int], options: ParseOptions, result: PdfPages,
               file_name: str) -> None:
    pages = result.pages
    if not options.ocr:
        result.notes.append(f"{_page_list(scanned)}: no text layer; OCR is turned off (ingest.ocr)")
        return
    limit = options.max_ocr_pages
    if len(scanned) > limit:
        result.notes.append(f"{_page_list(scanned[limit:])}: not OCR'd: a document may have at most {limit} "
                            "OCR'd pages (storage.max_ocr_pages)")
        scanned = scanned[:limit]
    if not scanned:
        return
    try:
        tessdata = find_tessdata(options.tessdata)
        languages = _languages(pdf[scanned[0]], options, tessdata, "\n".join(page.text for page in pages))
        require_languages(tessdata, languages)
    except OcrUnavailableError as exc:
        result.ocr_error = str(exc)
        result.notes.append(f"{_page_list(scanned)}: no text layer and not OCR'd: {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - the probe page itself may be unreadable
        result.notes.append(f"{_page_list(scanned)}: OCR failed ({type(exc).__name__}: {exc})")
        return
    result.ocr_languages = languages
    for done, index in enumerate(scanned):
        page_done("ocr", done, len(scanned))  # pages OCR'd so far (a failed page counts as done too)
        number = index + 1
        try:
            blocks = ocr_layout(ocr_textpage(pdf[index], languages, options.ocr_dpi, tessdata))
        except Exception as exc:  # noqa: BLE001 - one unreadable scan must not fail the document
            logger.warning("%s: OCR of page %d failed (%s: %s)", file_name, number, type(exc).__name__, exc)
            result.notes.append(f"page {number}: OCR failed ({type(exc).__name__}: {exc}); the page has no text")
            continue
        page, _ = assemble(list(blocks), number, pdf[index].rect, table_max_tokens=options.table_max_tokens)
        page.ocr = True
        pages[index] = page
        if not page.text.strip():
            result.notes.append(f"page {number}: OCR found no text on this page")
    page_done("ocr", len(scanned), len(scanned))
    logger.info("%s: OCR'd %d page(s) with %s", file_name, len(scanned), languages)


def _languages(probe_page: pymupdf.Page, options: ParseOptions, tessdata, text_layer: str) -> str:
    """``options.ocr_languages``, or for ``auto`` the script of the text pages or of a probe of the scan."""
    if options.ocr_languages != "auto":
        return options.ocr_languages
    if text_layer.strip():
        return script_of(text_layer)
    try:
        require_languages(tessdata, PROBE_LANGUAGES)
    except OcrUnavailableError as exc:  # English data alone still reads English scans
        logger.warning("OCR language not detected, reading as English: %s", exc)
        return "eng"
    return probe_script(probe_page, tessdata)


def assemble(items: list[Item], number: int, rect: pymupdf.Rect, *,
             table_max_tokens: int) -> tuple[Page, list[LineInfo]]:
    """A ``Page`` (text, words with offsets, table spans) and its text lines, from blocks and tables."""
    parts: list[str] = []
    words: list[Word] = []
    infos: list[LineInfo] = []
    tables: list[TableSpan] = []
    position = 0

    def emit(text: str) -> None:
        nonlocal position
        parts.append(text)
        position += len(text)

    for item_index, item in enumerate(items):
        if isinstance(item, TableBlock):
            chunks = item.parts(table_max_tokens)
            caption = " ".join(" ".join(word.text for word in line.words) for line in item.caption)
            for part_number, (pieces, rows) in enumerate(chunks, start=1):
                if item_index or part_number > 1:
                    emit("\n\n")
                start = position
                for text, raw in pieces:
                    if raw is not None:
                        words.append(Word(text=text, box=raw.box, start=position, end=position + len(text)))
                    emit(text)
                tables.append(TableSpan(start=start, end=position, caption=caption, rows=rows, part=part_number,
                                        parts=len(chunks)))
            continue
        if item_index:
            emit("\n\n")
        _emit_block(item, number, item_index, emit, lambda: position, words, infos)
    page = Page(number=number, text="".join(parts), words=words, width=rect.width, height=rect.height,
                tables=tables)
    for info in infos:
        info.text = page.text[info.start:info.end]
    return page, infos


def _emit_block(block: list[RawLine], number: int, block_index: int, emit, position, words: list[Word],
                infos: list[LineInfo]) -> None:
    right_edge = max(line.x1 for line in block)
    for line_index, line in enumerate(block):
        line_start = position()
        following = block[line_index + 1] if line_index + 1 < len(block) else None
        for word_index, raw in enumerate(line.words):
            text = raw.text
            if word_index == len(line.words) - 1 and following and is_hyphen_break(text, following):
                text = text[:-1]
            if word_index:
                emit(raw.join)
            words.append(Word(text=text, box=raw.box, start=position(), end=position() + len(text)))
            emit(text)
        infos.append(LineInfo(page=number, start=line_start, end=position(), size=line.size, bold=line.bold,
                              block=block_index, upright=line.y1 - line.y0 <= 2 * (line.x1 - line.x0)))
        if following:
            emit(line_join(line, following, right_edge))


def _empty(pdf_page: pymupdf.Page, number: int) -> Page:
    rect = pdf_page.rect
    return Page(number=number, text="", width=rect.width, height=rect.height)


def _page_list(indexes: list[int]) -> str:
    """"page 4" or "pages 1-3, 7" for 0-based page indexes."""
    numbers = [index + 1 for index in indexes]
    return ("page " if len(numbers) == 1 else "pages ") + page_ranges(numbers)

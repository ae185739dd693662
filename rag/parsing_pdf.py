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
two-column papers; ``sort=True`` would interleave the columns line by line.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from itertools import groupby

import pymupdf

from rag.documents import Page, ParsedDocument, Section, Word
from rag.language import CJK_IDEOGRAPHS, CJK_RE
from rag.parsing_errors import CorruptFileError, EmptyDocumentError, EncryptedFileError, NoTextError
from rag.parsing_headings import LineInfo, detect_headings, first_page_title

log = logging.getLogger(__name__)

# Words with boxes, whitespace kept out of words, ligatures expanded ("ﬁ" -> "fi") so search works.
TEXT_FLAGS = pymupdf.TEXTFLAGS_WORDS & ~pymupdf.TEXT_PRESERVE_LIGATURES

_HYPHENATED_RE = re.compile(r"[A-Za-z]*[a-z]-")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u200b\ufeff]")
_CJK_PUNCTUATION = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u2018-\u201d"
_CJK_END_RE = re.compile(f"[{CJK_IDEOGRAPHS}{_CJK_PUNCTUATION}]$")
_CJK_START_RE = re.compile(f"^[{CJK_IDEOGRAPHS}]")
# Some PDF fonts map common ideographs to look-alike Kangxi radicals ("⼈" U+2F08 for "人"), which
# breaks search and embeddings; fold them to the unified ideographs.
_RADICALS = {code: unicodedata.normalize("NFKC", chr(code)) for code in range(0x2E80, 0x2FE0)
             if unicodedata.normalize("NFKC", chr(code)) != chr(code)}
_BAD_TITLE_RE = re.compile(r"^(untitled|microsoft (word|powerpoint)\b)|\.(docx?|pdf|tex|dvi|indd|pptx?|rtf)$",
                           re.IGNORECASE)


@dataclass
class _RawWord:
    text: str
    box: tuple[float, float, float, float]


@dataclass
class _RawLine:
    words: list[_RawWord]
    size: float
    bold: bool
    x0: float = 0.0
    y0: float = 0.0
    x1: float = 0.0
    y1: float = 0.0

    def __post_init__(self) -> None:
        boxes = [word.box for word in self.words]
        self.x0, self.y0 = min(box[0] for box in boxes), min(box[1] for box in boxes)
        self.x1, self.y1 = max(box[2] for box in boxes), max(box[3] for box in boxes)

    @property
    def height(self) -> float:
        return self.y1 - self.y0


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
    return pages, lines


def _read_page(pdf_page: pymupdf.Page, number: int) -> tuple[Page, list[LineInfo]]:
    textpage = pdf_page.get_textpage(flags=TEXT_FLAGS)
    blocks = _layout(textpage)
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
                if last and following and _is_hyphen_break(text, following):
                    text = text[:-1]
                if word_index:
                    emit(" ")
                words.append(Word(text=text, box=raw.box, start=position, end=position + len(text)))
                emit(text)
            infos.append(LineInfo(page=number, start=line_start, end=position, size=line.size,
                                  bold=line.bold, block=block_index))
            if following:
                emit(_line_join(line, following, right_edge))
    rect = pdf_page.rect
    page = Page(number=number, text="".join(parts), words=words, width=rect.width, height=rect.height)
    for info in infos:
        info.text = page.text[info.start:info.end]
    return page, infos


def _layout(textpage: pymupdf.TextPage) -> list[list[_RawLine]]:
    """Group PyMuPDF's words into blocks of lines, with each line's dominant font size."""
    dict_blocks = textpage.extractDICT()["blocks"]
    blocks: list[list[_RawLine]] = []
    for block_no, block_words in groupby(textpage.extractWORDS(), key=lambda w: w[5]):
        lines: list[_RawLine] = []
        for line_no, line_words in groupby(block_words, key=lambda w: w[6]):
            cleaned = [_RawWord(_clean(w[4]), (round(w[0], 2), round(w[1], 2), round(w[2], 2), round(w[3], 2)))
                       for w in line_words]
            cleaned = [word for word in cleaned if word.text]
            if cleaned:
                size, bold = _font_of(dict_blocks, block_no, line_no)
                lines.append(_RawLine(words=cleaned, size=size, bold=bold))
        if lines:
            blocks.append(lines)
    return _merge_wrapped_blocks(blocks)


def _merge_wrapped_blocks(blocks: list[list[_RawLine]]) -> list[list[_RawLine]]:
    """Rejoin paragraphs that MuPDF split into one block per line (common in Chinese reports).

    A block continues the previous one when the previous line runs to the column's right edge,
    the next line follows directly below (gap under one line height), is not indented, and has the
    same font size.
    """
    all_lines = [line for block in blocks for line in block]
    merged: list[list[_RawLine]] = []
    for block in blocks:
        if merged and _continues(merged[-1][-1], block[0], all_lines):
            merged[-1].extend(block)
        else:
            merged.append(list(block))
    return merged


def _continues(last: _RawLine, first: _RawLine, page_lines: list[_RawLine]) -> bool:
    height = last.height
    if abs(last.size - first.size) > 0.5 or not 0 <= first.y0 - last.y1 <= height:
        return False
    if first.x0 > last.x0 + height / 2:  # an indented first line starts a new paragraph
        return False
    column_right = max(line.x1 for line in page_lines
                       if abs(line.size - last.size) <= 0.5 and line.x0 < last.x1 and line.x1 > last.x0)
    return last.x1 >= column_right - 2 * height


def _clean(text: str) -> str:
    return _CONTROL_RE.sub("", text).translate(_RADICALS)


def _font_of(dict_blocks: list[dict], block_no: int, line_no: int) -> tuple[float, bool]:
    """Dominant (most characters) font size of a line, and whether that span is bold."""
    try:
        spans = dict_blocks[block_no]["lines"][line_no]["spans"]
    except (IndexError, KeyError):
        return 0.0, False
    spans = [span for span in spans if span["text"].strip()]
    if not spans:
        return 0.0, False
    main = max(spans, key=lambda span: len(span["text"].strip()))
    bold = bool(main["flags"] & pymupdf.TEXT_FONT_BOLD) or "bold" in main["font"].lower()
    return round(main["size"], 1), bold


def _is_hyphen_break(text: str, following: _RawLine) -> bool:
    """``inter-`` at a line end followed by ``national``: a word split by hyphenation."""
    return bool(_HYPHENATED_RE.fullmatch(text)) and following.words[0].text[:1].islower()


def _line_join(line: _RawLine, following: _RawLine, right_edge: float) -> str:
    last, first = line.words[-1].text, following.words[0].text
    if _HYPHENATED_RE.fullmatch(last) and first[:1].islower():
        return ""
    wrapped = line.x1 >= right_edge - 2 * line.height
    if wrapped and _CJK_END_RE.search(last) and _CJK_START_RE.search(first):
        return ""
    return "\n"


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

"""Word, HTML, Markdown and plain-text files to one page of text with headings.

These formats have no pages, so each becomes a single ``Page`` (number 1, no word boxes). HTML is
reduced to its visible text — markup, scripts and styles never reach the index, because whatever
reaches the index can end up in a prompt.
"""

from __future__ import annotations

import logging
import re
from io import BytesIO

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from rag.documents import Page, ParsedDocument, Section
from rag.text.language import cjk_share
from rag.ingest.parse_errors import CorruptFileError, NoTextError, looks_like_text, sniff_kind

log = logging.getLogger(__name__)

_MD_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_MD_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
_HTML_DROP = {"script", "style", "nav", "noscript", "template", "svg", "iframe", "head", "object",
              "embed", "canvas", "button", "select", "textarea", "math"}
_HTML_BLOCKS = {"p", "div", "section", "article", "main", "aside", "header", "footer", "li", "ul", "ol",
                "dl", "dt", "dd", "table", "blockquote", "pre",
                "figure", "figcaption", "address", "details", "summary", "caption", "hr",
                "h1", "h2", "h3", "h4", "h5", "h6", "body", "html"}
_HTML_SKIPPED_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)


def decode_text(data: bytes, file_name: str) -> str:
    """Decode a text file: UTF-8 (or UTF-16 with BOM), then GB18030 for legacy Chinese, then Latin-1."""
    if not looks_like_text(data[:8192]):
        raise CorruptFileError(f"{file_name} is not a text file (content looks like {sniff_kind(data)}).")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = _decode_legacy(data)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode_legacy(data: bytes) -> str:
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        return data.decode("latin-1")
    non_ascii = "".join(char for char in text if ord(char) > 127)
    # Latin-1 bytes often pair up into valid GB18030; only trust it when the result is Chinese.
    return text if non_ascii and cjk_share(non_ascii) > 0.5 else data.decode("latin-1")


def parse_text(data: bytes, file_name: str) -> ParsedDocument:
    text = _require_text(decode_text(data, file_name).strip(), file_name)
    return ParsedDocument(file_name=file_name, file_type="txt", pages=[Page(number=1, text=text)],
                          title=file_name)


def parse_markdown(data: bytes, file_name: str) -> ParsedDocument:
    """Keep the Markdown source as the text (it reads fine); ``#`` lines become sections."""
    text = _require_text(decode_text(data, file_name).strip(), file_name)
    sections: list[Section] = []
    position, in_fence = 0, False
    for line in text.split("\n"):
        if _MD_FENCE_RE.match(line):
            in_fence = not in_fence
        elif not in_fence and (match := _MD_HEADING_RE.match(line)):
            sections.append(Section(title=match.group(2).strip(), level=len(match.group(1)), page=1,
                                    offset=position))
        position += len(line) + 1
    title = sections[0].title if sections else file_name
    return ParsedDocument(file_name=file_name, file_type="md", pages=[Page(number=1, text=text)],
                          sections=sections, title=title)


def parse_html(data: bytes, file_name: str) -> ParsedDocument:
    """Visible text of the page, one paragraph per block element; h1-h6 become sections."""
    if not looks_like_text(data[:8192]):
        raise CorruptFileError(f"{file_name} is not an HTML page (content looks like {sniff_kind(data)}).")
    soup = BeautifulSoup(data, "html.parser")
    head_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    walker = _HtmlText()
    walker.walk(soup)
    walker.flush()
    text = _require_text("\n\n".join(walker.blocks), file_name)
    starts, position = [], 0
    for block in walker.blocks:
        starts.append(position)
        position += len(block) + 2
    sections = [Section(title=walker.blocks[index], level=level, page=1, offset=starts[index])
                for index, level in walker.headings]
    title = head_title or (sections[0].title if sections else file_name)
    return ParsedDocument(file_name=file_name, file_type="html", pages=[Page(number=1, text=text)],
                          sections=sections, title=title)


class _HtmlText:
    """Depth-first walk that collects whitespace-collapsed text blocks and heading positions."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.headings: list[tuple[int, int]] = []  # (block index, level)
        self._buffer: list[str] = []

    def walk(self, node: Tag, preformatted: bool = False) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _HTML_SKIPPED_STRINGS):
                    text = str(child)
                    self._buffer.append(text.replace("\n", "\x00") if preformatted else text)
            elif isinstance(child, Tag):
                self._tag(child, preformatted)

    def _tag(self, tag: Tag, preformatted: bool) -> None:
        name = tag.name.lower()
        if name in _HTML_DROP or tag.get("hidden") is not None or tag.get("aria-hidden") == "true":
            return
        if name == "br":
            self._buffer.append("\x00")
        elif name in ("td", "th"):
            self.walk(tag, preformatted)
            self._buffer.append(" | ")
        elif name == "tr":  # rows are lines of one table block
            self.walk(tag, preformatted)
            self._buffer.append("\x00")
        elif name in _HTML_BLOCKS:
            self.flush()
            self.walk(tag, preformatted or name == "pre")
            if name in ("h1", "h2", "h3", "h4", "h5", "h6") and self.flush():
                self.headings.append((len(self.blocks) - 1, int(name[1])))
            self.flush()
        else:
            self.walk(tag, preformatted)

    def flush(self) -> bool:
        """Close the current block; True when it had text."""
        raw = "".join(self._buffer)
        self._buffer = []
        lines = (" ".join(part.split()) for part in raw.split("\x00"))
        text = "\n".join(line.strip(" |") for line in lines if line.strip(" |")).strip()
        if text:
            self.blocks.append(text)
        return bool(text)


def parse_docx(data: bytes, file_name: str) -> ParsedDocument:
    """Paragraphs and tables in body order; "Heading N" and "Title" styles become sections."""
    import docx  # python-docx; imported here because only .docx uploads need it
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(BytesIO(data))
    except Exception as exc:  # BadZipFile, KeyError, python-docx's PackageNotFoundError, lxml errors
        raise CorruptFileError(f"{file_name} could not be read as a Word document (.docx); "
                               "it may be damaged.") from exc
    blocks: list[str] = []
    headings: list[tuple[int, int]] = []
    for element in document.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            paragraph = Paragraph(element, document)
            text = " ".join(paragraph.text.split())
            if text:
                level = _docx_heading_level(paragraph.style.name if paragraph.style else "")
                if level:
                    headings.append((len(blocks), level))
                blocks.append(text)
        elif tag == "tbl":
            rows = [" | ".join(" ".join(cell.text.split()) for cell in row.cells)
                    for row in Table(element, document).rows]
            table = "\n".join(row for row in rows if row.strip(" |"))
            if table:
                blocks.append(table)
    text = _require_text("\n\n".join(blocks), file_name)
    starts, position = [], 0
    for block in blocks:
        starts.append(position)
        position += len(block) + 2
    sections = [Section(title=blocks[index], level=level, page=1, offset=starts[index])
                for index, level in headings]
    core_title = (document.core_properties.title or "").strip()
    title = core_title or (sections[0].title if sections else file_name)
    return ParsedDocument(file_name=file_name, file_type="docx", pages=[Page(number=1, text=text)],
                          sections=sections, title=title)


def _docx_heading_level(style_name: str) -> int:
    """1-9 for "Heading N" (and localised "标题 N"), 1 for "Title", else 0."""
    name = style_name.strip().lower()
    if name == "title":
        return 1
    match = re.fullmatch(r"(?:heading|标题)\s*(\d)", name)
    return int(match.group(1)) if match else 0


def _require_text(text: str, file_name: str) -> str:
    if not text.strip():
        raise NoTextError(f"{file_name} contains no text.")
    return text

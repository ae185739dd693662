"""Word, HTML, Markdown and plain-text files to one page of text with headings.

These formats have no pages, so each becomes a single ``Page`` (number 1, no word boxes). HTML is
reduced to its visible text — markup, scripts and styles never reach the index, because whatever
reaches the index can end up in a prompt.
"""

from __future__ import annotations

import logging
import re
import zipfile
from functools import partial
from io import BytesIO
from typing import Any, Callable

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from rag.documents import Page, ParsedDocument, Section
from rag.text.language import cjk_share
from rag.ingest.options import ParseOptions
from rag.ingest.parse_errors import ContentLimitError, CorruptFileError, NoTextError, looks_like_text, sniff_kind

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
MAX_ARCHIVE_MEMBERS = 10_000  # a long Word document with many images has a few hundred


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


def parse_text(data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
    text = _require_text(decode_text(data, file_name).strip(), file_name)
    return ParsedDocument(file_name=file_name, file_type="txt", pages=[Page(number=1, text=text)],
                          title=file_name)


def parse_markdown(data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
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


def parse_html(data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
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
    """Depth-first walk that collects whitespace-collapsed text blocks and heading positions.

    The walk keeps its own stack instead of recursing, so a page nested thousands of tags deep (a
    hostile upload) is read like any other instead of overflowing Python's recursion limit.
    """

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.headings: list[tuple[int, int]] = []  # (block index, level)
        self._buffer: list[str] = []

    def walk(self, node: Tag, preformatted: bool = False) -> None:
        stack: list[tuple[Any, bool] | Callable[[], None]] = [(node, preformatted)]
        while stack:
            entry = stack.pop()
            if callable(entry):
                entry()
                continue
            tag, pre = entry
            for child in reversed(list(tag.children)):
                if isinstance(child, NavigableString):
                    if not isinstance(child, _HTML_SKIPPED_STRINGS):
                        text = str(child)
                        stack.append(partial(self._buffer.append, text.replace("\n", "\x00") if pre else text))
                elif isinstance(child, Tag):
                    stack.extend(reversed(self._tag(child, pre)))

    def _tag(self, tag: Tag, preformatted: bool) -> list[tuple[Any, bool] | Callable[[], None]]:
        """What visiting ``tag`` does, in order: actions, and (tag, preformatted) to walk its children."""
        name = tag.name.lower()
        if name in _HTML_DROP or tag.get("hidden") is not None or tag.get("aria-hidden") == "true":
            return []
        if name == "br":
            return [partial(self._buffer.append, "\x00")]
        if name in ("td", "th"):
            return [(tag, preformatted), partial(self._buffer.append, " | ")]
        if name == "tr":  # rows are lines of one table block
            return [(tag, preformatted), partial(self._buffer.append, "\x00")]
        if name in _HTML_BLOCKS:
            return [self.flush, (tag, preformatted or name == "pre"), partial(self._close, name)]
        return [(tag, preformatted)]

    def _close(self, name: str) -> None:
        if name in ("h1", "h2", "h3", "h4", "h5", "h6") and self.flush():
            self.headings.append((len(self.blocks) - 1, int(name[1])))
        self.flush()

    def flush(self) -> bool:
        """Close the current block; True when it had text."""
        raw = "".join(self._buffer)
        self._buffer = []
        lines = (" ".join(part.split()) for part in raw.split("\x00"))
        text = "\n".join(line.strip(" |") for line in lines if line.strip(" |")).strip()
        if text:
            self.blocks.append(text)
        return bool(text)


def parse_docx(data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
    """Paragraphs and tables in body order; "Heading N" and "Title" styles become sections.

    Raises:
        ContentLimitError: the archive unpacks to more than ``options.max_unpacked_mb`` or holds more
            than ``MAX_ARCHIVE_MEMBERS`` files (a ZIP bomb is small on disk and huge in memory).
    """
    import docx  # python-docx; imported here because only .docx uploads need it
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    check_archive(data, file_name, options or ParseOptions())
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


def check_archive(data: bytes, file_name: str, options: ParseOptions) -> None:
    """Refuse a ZIP-based file that would unpack to more than the limits allow, before unpacking it.

    The sizes come from the archive's directory; a member that claims less than it holds fails its
    CRC check when read, because ``zipfile`` stops at the claimed size.
    """
    try:
        members = zipfile.ZipFile(BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # damaged: python-docx says so in its own words
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise ContentLimitError(f"{file_name} holds {len(members):,} files inside its archive, over the limit of "
                                f"{MAX_ARCHIVE_MEMBERS:,}; it is not an ordinary Word document.")
    unpacked = sum(member.file_size for member in members)
    limit = options.max_unpacked_mb * 1024 * 1024
    if unpacked > limit:
        raise ContentLimitError(f"{file_name} unpacks to {unpacked / 1024 / 1024:,.0f} MB, over the limit of "
                                f"{options.max_unpacked_mb:g} MB (storage.max_unpacked_mb); it may be a ZIP bomb "
                                "or hold very large embedded files.")


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

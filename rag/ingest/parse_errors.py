"""Parse errors the user sees, and content sniffing to make them specific.

Every message starts with the file name and says what is wrong in plain words, because the library
page shows it verbatim next to the failed upload.
"""

from __future__ import annotations

import zipfile
from io import BytesIO


class ParseError(ValueError):
    """A file could not be turned into text; the message is meant for the user."""


class CorruptFileError(ParseError):
    """The bytes are damaged, truncated, or are not the format the file name claims."""


class EncryptedFileError(ParseError):
    """The document needs a password to open."""


class EmptyDocumentError(ParseError):
    """The document has no pages (or the file has no bytes at all)."""


class NoTextError(ParseError):
    """The document opened fine but holds no extractable text (scans, images, blank pages)."""


class UnsupportedFileError(ParseError):
    """The file type is not one we parse."""


class ContentLimitError(ParseError):
    """The content is larger than a limit allows (pages, unpacked size, text); the message names the limit."""


def sniff_kind(data: bytes) -> str:
    """Name what ``data`` looks like, from magic bytes first and text heuristics second.

    Returns a short human phrase ("a PDF", "a PNG image", "plain text", ...) that fits into
    messages such as "report.pdf is not a PDF (content looks like a PNG image)".
    """
    head = data[:1024]
    if b"%PDF-" in head:
        return "a PDF"
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(data)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "a WebP image"
    stripped = head.lstrip().lower()
    if stripped.startswith((b"<!doctype html", b"<html")) or b"<body" in stripped:
        return "an HTML page"
    if stripped.startswith(b"<?xml") or stripped.startswith(b"<svg"):
        return "an XML document"
    if stripped.startswith((b"{", b"[")) and looks_like_text(head):
        return "JSON or plain text"
    return "plain text" if looks_like_text(head) else "binary data"


def looks_like_text(data: bytes) -> bool:
    """True when ``data`` decodes as text without control bytes (UTF-16 with a BOM counts)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    if b"\x00" in data:
        return False
    for encoding in ("utf-8", "gb18030"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError as exc:
            if exc.start >= len(data) - 4:  # a multi-byte character cut at the sample's end
                text = data[: exc.start].decode(encoding, errors="ignore")
                break
    else:
        text = data.decode("latin-1")
    controls = sum(1 for char in text if ord(char) < 32 and char not in "\r\n\t\f")
    return controls <= max(1, len(text) // 100)


def _zip_kind(data: bytes) -> str:
    try:
        names = set(zipfile.ZipFile(BytesIO(data)).namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return "a damaged ZIP archive"
    if "word/document.xml" in names:
        return "a Word document"
    if any(name.startswith("xl/") for name in names):
        return "an Excel workbook"
    if any(name.startswith("ppt/") for name in names):
        return "a PowerPoint presentation"
    return "a ZIP archive"


_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office document (.doc/.xls/.ppt)"),
    (b"{\\rtf", "an RTF document"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"),
    (b"\x7fELF", "an executable"),
]

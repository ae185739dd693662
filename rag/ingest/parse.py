"""Turn an uploaded file into a ``ParsedDocument``, or fail with a message the user can act on.

The parser is chosen from the file's content first and its extension second: a PDF saved as
``.txt`` is still parsed as a PDF, while a PNG renamed ``.pdf`` is reported as "not a PDF (content
looks like a PNG image)" instead of as a vague PyMuPDF error.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Callable

from rag.documents import ParsedDocument
from rag.ingest.options import ParseOptions
from rag.ingest.parse_errors import (
    ContentLimitError,
    CorruptFileError,
    EmptyDocumentError,
    EncryptedFileError,
    NoTextError,
    ParseError,
    UnsupportedFileError,
    sniff_kind,
)
from rag.ingest.markup import parse_docx, parse_html, parse_markdown, parse_text
from rag.ingest.pdf import parse_pdf

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "ContentLimitError",
    "CorruptFileError",
    "EmptyDocumentError",
    "EncryptedFileError",
    "NoTextError",
    "ParseError",
    "ParseOptions",
    "UnsupportedFileError",
    "file_type_of",
    "parse_bytes",
    "parse_file",
]

log = logging.getLogger(__name__)

Parser = Callable[[bytes, str, ParseOptions], ParsedDocument]

_PARSERS: dict[str, Parser] = {
    "pdf": parse_pdf,
    "docx": parse_docx,
    "md": parse_markdown,
    "html": parse_html,
    "txt": parse_text,
}
_EXTENSIONS = {".pdf": "pdf", ".docx": "docx", ".md": "md", ".markdown": "md", ".html": "html",
               ".htm": "html", ".txt": "txt", ".text": "txt"}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(_EXTENSIONS)
# Binary formats whose content must match the extension ("a damaged ZIP archive" may be a cut-off
# .docx; python-docx then reports it as damaged).
_EXPECTED_KINDS = {"pdf": ("a PDF",), "docx": ("a Word document", "a damaged ZIP archive")}
_FORMAT_NAME = {"pdf": "a PDF", "docx": "a .docx Word document"}


def parse_file(path: Path, *, file_name: str | None = None, options: ParseOptions | None = None) -> ParsedDocument:
    """Parse a PDF, DOCX, Markdown, HTML or text file.

    Args:
        path: Where the bytes are (uploads are often stored under a hash, not their real name).
        file_name: The name shown to the user and stored on the document. Defaults to ``path.name``.
        options: OCR, tables and content limits. Defaults to ``ParseOptions()``.

    Raises:
        ParseError: one of its subclasses, with a message naming the file and the problem.
    """
    path = Path(path)
    name = file_name or path.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError(f"{name} could not be read: {exc.strerror or exc}") from exc
    return parse_bytes(data, name, options)


def parse_bytes(data: bytes, file_name: str, options: ParseOptions | None = None) -> ParsedDocument:
    """Parse in-memory file content; ``file_name`` decides the type together with the content.

    Raises:
        ParseError: one of its subclasses; ``ContentLimitError`` when the text is longer than
            ``options.max_text_chars``.
    """
    options = options or ParseOptions()
    if not data:
        raise EmptyDocumentError(f"{file_name} is empty (0 bytes).")
    file_type = file_type_of(data, file_name)
    started = time.perf_counter()
    document = _PARSERS[file_type](data, file_name, options)
    characters = sum(len(page.text) for page in document.pages)
    if characters > options.max_text_chars:
        raise ContentLimitError(f"{file_name} holds {characters:,} characters of text, over the limit of "
                                f"{options.max_text_chars:,} (storage.max_text_chars); split it into smaller files.")
    log.info("parsed %s as %s: %d page(s), %d section(s), %d chars in %.2f s", file_name, file_type,
             len(document.pages), len(document.sections), len(document.full_text),
             time.perf_counter() - started)
    return document


def file_type_of(data: bytes, file_name: str) -> str:
    """Pick the parser: PDF content wins, then the extension, checked against the content.

    Raises:
        CorruptFileError: the extension promises a binary format the content is not.
        UnsupportedFileError: neither content nor extension is a supported type.
    """
    kind = sniff_kind(data)
    if kind == "a PDF":
        return "pdf"
    suffix = Path(file_name).suffix.lower()
    file_type = _EXTENSIONS.get(suffix)
    if file_type is None:
        if kind == "a Word document":
            return "docx"
        supported = ", ".join(sorted({ext.lstrip(".") for ext in _EXTENSIONS}))
        hint = f" (content looks like {kind})" if kind not in ("plain text", "binary data") else ""
        raise UnsupportedFileError(f"{file_name} is not a supported file type{hint}; "
                                   f"supported types: {supported}.")
    expected = _EXPECTED_KINDS.get(file_type)
    if expected and kind not in expected:
        raise CorruptFileError(f"{file_name} is not {_FORMAT_NAME[file_type]} (content looks like {kind}).")
    return file_type

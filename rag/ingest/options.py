"""What a parser may do and how much content it accepts: OCR, tables and the content limits.

Parsers take these as one frozen value instead of the whole config, so parsing stays testable
without a store and the limits cannot be lifted by anything a document or a preset contains.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.config import RagConfig


@dataclass(frozen=True)
class ParseOptions:
    """Parsing switches and limits.

    Args:
        ocr: OCR pages that have no text layer. Defaults to True.
        ocr_languages: ``auto`` or Tesseract languages joined by ``+``. Defaults to ``auto``.
        ocr_dpi: Resolution the page is rendered at for Tesseract. Defaults to 300.
        tessdata: Tesseract's language-data folder; empty finds it (``rag.ingest.ocr.find_tessdata``).
        tables: Turn tables found by PyMuPDF into Markdown blocks. Defaults to True.
        table_max_tokens: A table longer than this is split into parts that repeat its caption and
            header row (at most the chunk size, so each part is one chunk). Defaults to 100.
        max_pages: Refuse documents with more pages. Defaults to 2000.
        max_unpacked_mb: Refuse DOCX archives that decompress to more. Defaults to 200.
        max_text_chars: Refuse documents whose extracted text is longer. Defaults to 20 million.
        max_ocr_pages: OCR at most this many pages per document; later ones are noted. Defaults to 300.
    """

    ocr: bool = True
    ocr_languages: str = "auto"
    ocr_dpi: int = 300
    tessdata: str = ""
    tables: bool = True
    table_max_tokens: int = 100
    max_pages: int = 2000
    max_unpacked_mb: float = 200.0
    max_text_chars: int = 20_000_000
    max_ocr_pages: int = 300

    @classmethod
    def from_config(cls, config: RagConfig) -> ParseOptions:
        """The options an ingest with ``config`` parses with."""
        ingest, storage = config.ingest, config.storage
        return cls(ocr=ingest.ocr, ocr_languages=ingest.ocr_languages, ocr_dpi=ingest.ocr_dpi,
                   tables=ingest.tables,
                   table_max_tokens=min(ingest.table_chunk_tokens or config.chunking.chunk_size,
                                        config.chunking.chunk_size),
                   max_pages=storage.max_pages, max_unpacked_mb=storage.max_unpacked_mb,
                   max_text_chars=storage.max_text_chars, max_ocr_pages=storage.max_ocr_pages)

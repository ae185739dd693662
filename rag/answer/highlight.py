"""Exact highlights: from a quoted passage of a chunk to rectangles on the PDF page(s).

A chunk's text is ``full_text[char_start:char_end]`` and every ``Page.words`` entry carries its offsets
into ``Page.text`` plus its box, so a quote maps to words through offsets alone — no fuzzy matching of
PDF lines. Word boxes are merged into one rectangle per line (a passage that wraps gives one rect per
line; one that crosses a page break gives rects on both pages).

Chinese: ``get_text("words")`` returns a whole CJK run as one word, so a quote that starts or ends
inside such a run is narrowed with ``page.search_for`` clipped to that word's box, falling back to a
width estimate per character when the PDF is not available or the glyphs differ (Kangxi radicals).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from pathlib import Path
from typing import Any, Sequence

import pymupdf

from rag.documents import Box, Chunk, Page, Word
from rag.answer.render import render_page_png
from rag.index.store import DocumentStore

logger = logging.getLogger(__name__)

PAGE_SEPARATOR = "\n\n"  # ParsedDocument.separator
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")

PageRects = tuple[int, list[list[float]]]


def locate_passage(store: DocumentStore, chunk_id_or_chunk: str | Chunk, quote: str, *,
                   pages: Sequence[Page] | None = None, pdf_path: Path | None = None) -> list[PageRects]:
    """Rectangles of ``quote`` (a passage of the chunk) on its page(s).

    Args:
        store: Where the chunk, its pages and the stored PDF live.
        chunk_id_or_chunk: A ``Chunk`` or its id.
        quote: Verbatim text of the chunk (whitespace may differ). Empty or not found: the whole chunk.
        pages: The document's pages, if the caller already has them. Defaults to ``store.pages``.
        pdf_path: The PDF, for narrowing CJK runs. Defaults to the stored file (skipped if missing).

    Returns:
        ``[(page_number, [[x0, y0, x1, y1], ...]), ...]`` in reading order; empty when the document has
        no word boxes (e.g. a text file).
    """
    chunk = _resolve_chunk(store, chunk_id_or_chunk)
    if chunk is None:
        return []
    if pages is None:
        try:
            pages = store.pages(chunk.doc_id)
        except (OSError, ValueError) as exc:
            logger.info("no page data for %s: %s", chunk.doc_id, exc)
            return []
    start, end = find_in_text(chunk.text, quote) if quote.strip() else (0, len(chunk.text))
    if pdf_path is None:
        try:
            pdf_path = store.stored_file(chunk.doc_id)
        except KeyError:
            pdf_path = None
    return span_rects(pages, chunk.char_start + start, chunk.char_start + end, pdf_path=pdf_path)


def span_rects(pages: Sequence[Page], start: int, end: int, *, pdf_path: Path | None = None) -> list[PageRects]:
    """Rectangles (one per line) of ``full_text[start:end]`` over the given pages."""
    result: list[PageRects] = []
    document = None
    try:
        offset = 0
        for page in pages:
            page_start, page_end = offset, offset + len(page.text)
            offset = page_end + len(PAGE_SEPARATOR)
            if page_end <= start or page_start >= end:
                continue
            local_start, local_end = max(start, page_start) - page_start, min(end, page_end) - page_start
            boxes = []
            for word in page.words:
                if word.end <= local_start or word.start >= local_end:
                    continue
                if (word.start < local_start or word.end > local_end) and _CJK.search(word.text):
                    if document is None and pdf_path is not None and Path(pdf_path).suffix.lower() == ".pdf":
                        document = _open(pdf_path)
                    pdf_page = document[page.number - 1] if document is not None else None
                    boxes.append(_narrow(word, local_start, local_end, pdf_page))
                else:
                    boxes.append(word.box)
            rects = merge_lines(boxes)
            if rects:
                result.append((page.number, rects))
    finally:
        if document is not None:
            document.close()
    return result


def merge_lines(boxes: Sequence[Box]) -> list[list[float]]:
    """Union consecutive word boxes that sit on the same line; one rectangle per line."""
    lines: list[list[float]] = []
    for x0, y0, x1, y1 in boxes:
        if lines:
            current = lines[-1]
            height = max(current[3] - current[1], y1 - y0, 1.0)
            same_line = abs((y0 + y1) / 2 - (current[1] + current[3]) / 2) < 0.5 * height and x0 >= current[0] - 1
            if same_line:
                current[:] = [min(current[0], x0), min(current[1], y0), max(current[2], x1), max(current[3], y1)]
                continue
        lines.append([float(x0), float(y0), float(x1), float(y1)])
    return [[round(v, 2) for v in rect] for rect in lines]


def find_in_text(text: str, quote: str) -> tuple[int, int]:
    """(start, end) of ``quote`` in ``text``, ignoring whitespace and Unicode compatibility forms.

    Falls back to the whole text when the quote is not there.
    """
    position = text.find(quote)
    if position >= 0:
        return position, position + len(quote)
    squeezed, index = _squeeze(text)
    target, _ = _squeeze(quote)
    if target:
        found = squeezed.find(target)
        if found >= 0:
            return index[found], index[found + len(target) - 1] + 1
    return 0, len(text)


def _squeeze(text: str) -> tuple[str, list[int]]:
    """Text without whitespace or hyphens, NFKC-folded and lower-cased, with each char's original index."""
    chars, index = [], []
    for i, char in enumerate(text):
        if char.isspace() or char in "-\u00ad":
            continue
        for folded in unicodedata.normalize("NFKC", char).lower():
            chars.append(folded)
            index.append(i)
    return "".join(chars), index


def _narrow(word: Word, start: int, end: int, pdf_page: Any) -> Box:
    """The part of a CJK run word covering ``[start, end)`` of the page text."""
    first = max(start, word.start) - word.start
    last = min(end, word.end) - word.start
    piece = word.text[first:last]
    if pdf_page is not None and piece.strip():
        x0, y0, x1, y1 = word.box
        clip = pymupdf.Rect(x0 - 1, y0 - 1, x1 + 1, y1 + 1)
        try:
            hits = pdf_page.search_for(piece, clip=clip)
        except Exception as exc:  # noqa: BLE001 - fall back to the estimate below
            logger.debug("search_for failed: %s", exc)
            hits = []
        if hits:
            estimate = _estimate(word, first, last)
            hit = min(hits, key=lambda r: abs(r.x0 - estimate[0]))
            return (hit.x0, max(hit.y0, y0), hit.x1, min(hit.y1, y1) if hit.y1 > y0 else y1)
    return _estimate(word, first, last)


def _estimate(word: Word, first: int, last: int) -> Box:
    """Split the word box by character widths: CJK/full-width characters count 1, others 0.55."""
    weights = [1.0 if _CJK.match(c) else 0.55 for c in word.text] or [1.0]
    total = sum(weights)
    x0, y0, x1, y1 = word.box
    left = x0 + (x1 - x0) * sum(weights[:first]) / total
    right = x0 + (x1 - x0) * sum(weights[:last]) / total
    return (left, y0, right, y1)


def _open(pdf_path: Path) -> Any:
    try:
        return pymupdf.open(pdf_path)
    except Exception as exc:  # noqa: BLE001 - highlights degrade to estimates
        logger.info("cannot open %s for highlighting: %s", pdf_path, exc)
        return None


def _resolve_chunk(store: DocumentStore, chunk_id_or_chunk: str | Chunk) -> Chunk | None:
    if isinstance(chunk_id_or_chunk, Chunk):
        return chunk_id_or_chunk
    return store.keywords.get([chunk_id_or_chunk]).get(chunk_id_or_chunk)


def render_highlighted_page(pdf_path: str | Path, page: int, rects: Sequence[Sequence[float]],
                            dpi: int = 110) -> bytes:
    """PNG of one page (1-based) with ``rects`` highlighted, within ``render_page_png``'s pixel budget.

    Raises:
        rag.answer.render.PageTooLargeError: The page is too large to draw readably within the budget.
    """
    return render_page_png(Path(pdf_path), page, dpi=dpi, highlights=[tuple(r) for r in rects])

"""Page images for previews and highlights, within a pixel budget.

A PDF page can be 200 × 200 inches (14,400 pt, the format's limit): at the preview's 110 dpi that is
484 megapixels, about 1.4 GB of RGB before PNG encoding. So a page that would pass ``MAX_PIXELS`` is
drawn at the DPI that fits, and a page that would need less than ``MIN_DPI`` to fit is refused with
a message giving its size, rather than shown as an unreadable smudge.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Sequence

import pymupdf

from rag.documents import Box

logger = logging.getLogger(__name__)

HIGHLIGHT_RGB = (1.0, 0.85, 0.1)
MAX_PIXELS = 4_000_000  # an A4 page at 110 dpi is 1.2 megapixels; A2 and larger get a lower DPI
MIN_DPI = 30


class PageTooLargeError(ValueError):
    """The page cannot be drawn within the pixel budget at a readable resolution."""


def fitting_dpi(width_pt: float, height_pt: float, dpi: int, *, max_pixels: int = MAX_PIXELS,
                page_number: int = 0) -> int:
    """``dpi``, or the highest DPI at which a ``width_pt`` × ``height_pt`` page fits in ``max_pixels``.

    Args:
        width_pt: Page width in points (1/72 inch).
        height_pt: Page height in points.
        dpi: The resolution asked for.
        max_pixels: The pixel budget of one image.
        page_number: For the error message (1-based; 0 leaves it out).

    Raises:
        PageTooLargeError: Fitting would need less than ``MIN_DPI``, or the page has no area.
    """
    page = f"page {page_number}" if page_number else "the page"
    if not (width_pt > 0 and height_pt > 0):
        raise PageTooLargeError(f"{page} has no area ({width_pt:g} × {height_pt:g} pt); nothing to draw")
    pixels = (width_pt * dpi / 72) * (height_pt * dpi / 72)
    if pixels <= max_pixels:
        return dpi
    fitted = math.floor(72 * math.sqrt(max_pixels / (width_pt * height_pt)))
    if fitted < MIN_DPI:
        needed = (width_pt * MIN_DPI / 72) * (height_pt * MIN_DPI / 72)
        raise PageTooLargeError(
            f"{page} is {width_pt / 72:.0f} × {height_pt / 72:.0f} inches: even at {MIN_DPI} dpi its image would be "
            f"{needed / 1e6:.0f} megapixels, over the {max_pixels / 1e6:g}-megapixel preview limit. The quoted "
            "passage is the view of it")
    logger.info("%s drawn at %d dpi instead of %d to stay within %d pixels", page, fitted, dpi, max_pixels)
    return fitted


def render_page_png(pdf_path: Path, page_number: int, *, dpi: int = 110,
                    highlights: Sequence[Box] = (), max_pixels: int = MAX_PIXELS) -> bytes:
    """PNG of one page (1-based), with the given rectangles highlighted, at most ``max_pixels`` large.

    Args:
        pdf_path: The PDF.
        page_number: 1-based page number.
        dpi: The resolution wanted; lowered for a page too large to fit ``max_pixels`` at it.
        highlights: Rectangles (x0, y0, x1, y1) in page points.
        max_pixels: The pixel budget of the image.

    Raises:
        ValueError: The page number is out of range.
        PageTooLargeError: The page is too large to draw at ``MIN_DPI`` within ``max_pixels``.
    """
    with pymupdf.open(pdf_path) as document:
        if not 1 <= page_number <= document.page_count:
            raise ValueError(f"page {page_number} is outside 1..{document.page_count}")
        page = document[page_number - 1]
        dpi = fitting_dpi(page.rect.width, page.rect.height, dpi, max_pixels=max_pixels, page_number=page_number)
        for box in highlights:
            annotation = page.add_highlight_annot(pymupdf.Rect(*box))
            annotation.set_colors(stroke=HIGHLIGHT_RGB)
            annotation.update()
        return page.get_pixmap(dpi=dpi).tobytes("png")

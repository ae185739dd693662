"""Page images for previews and highlights."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pymupdf

from rag.documents import Box

HIGHLIGHT_RGB = (1.0, 0.85, 0.1)


def render_page_png(pdf_path: Path, page_number: int, *, dpi: int = 110,
                    highlights: Sequence[Box] = ()) -> bytes:
    """PNG of one page (1-based), with the given rectangles highlighted."""
    with pymupdf.open(pdf_path) as document:
        if not 1 <= page_number <= document.page_count:
            raise ValueError(f"page {page_number} is outside 1..{document.page_count}")
        page = document[page_number - 1]
        for box in highlights:
            annotation = page.add_highlight_annot(pymupdf.Rect(*box))
            annotation.set_colors(stroke=HIGHLIGHT_RGB)
            annotation.update()
        return page.get_pixmap(dpi=dpi).tobytes("png")

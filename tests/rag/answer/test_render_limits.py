"""Page previews and highlights stay within a pixel budget: a large page is drawn at a lower DPI, a
huge one is refused with its size, and neither ever asks PyMuPDF for the full-size image (a spy on
``Page.get_pixmap`` fails the test before anything that large is allocated)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from rag.answer.highlight import render_highlighted_page
from rag.answer.render import render_page_png

MAX_PIXELS = 4_000_000  # the budget rag.answer.render promises


@pytest.fixture
def pixmap_requests(monkeypatch) -> list[int]:
    """Pixel counts asked of ``get_pixmap``; a request over the budget fails instead of allocating."""
    asked: list[int] = []
    original = pymupdf.Page.get_pixmap

    def spy(page, *args, dpi: int | None = None, **kwargs):
        pixels = round(page.rect.width * (dpi or 72) / 72) * round(page.rect.height * (dpi or 72) / 72)
        asked.append(pixels)
        if pixels > MAX_PIXELS * 1.01:
            raise AssertionError(f"asked for a {pixels / 1e6:.0f}-megapixel image at {dpi} dpi")
        return original(page, *args, dpi=dpi, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "get_pixmap", spy)
    return asked


def _pdf(tmp_path: Path, width: float, height: float) -> Path:
    document = pymupdf.open()
    page = document.new_page(width=width, height=height)
    page.insert_text((72, 72), "The launch code is 4711.", fontsize=11)
    path = tmp_path / f"page-{width:g}x{height:g}.pdf"
    document.save(path)
    return path


def _size(png: bytes) -> tuple[int, int]:
    pixmap = pymupdf.Pixmap(png)
    return pixmap.width, pixmap.height


def test_an_ordinary_page_keeps_its_resolution(tmp_path: Path, pixmap_requests: list[int]) -> None:
    width, height = _size(render_page_png(_pdf(tmp_path, 595, 842), 1))
    assert abs(width - 595 * 110 / 72) <= 1 and abs(height - 842 * 110 / 72) <= 1


def test_a_large_page_is_drawn_at_a_lower_dpi_within_the_budget(tmp_path: Path, pixmap_requests: list[int]) -> None:
    a0 = (2384, 3370)  # 18.7 megapixels at 110 dpi
    width, height = _size(render_page_png(_pdf(tmp_path, *a0), 1))
    assert width * height <= MAX_PIXELS
    assert width * height > 0.9 * MAX_PIXELS  # as sharp as the budget allows, not a thumbnail
    png = render_highlighted_page(_pdf(tmp_path, *a0), 1, [[72, 60, 200, 80]])
    assert _size(png) == (width, height)


def test_a_huge_page_is_refused_with_its_size(tmp_path: Path, pixmap_requests: list[int]) -> None:
    path = _pdf(tmp_path, 14400, 14400)  # 200 x 200 in: 484 megapixels at 110 dpi
    for render in (lambda: render_page_png(path, 1), lambda: render_highlighted_page(path, 1, [[72, 60, 200, 80]])):
        with pytest.raises(ValueError, match=r"page 1 is 200 × 200 inches: even at 30 dpi .* over the "
                                                    r"4-megapixel preview limit"):
            render()
    assert pixmap_requests == []


def test_fitting_dpi() -> None:
    from rag.answer.render import MIN_DPI, PageTooLargeError, fitting_dpi

    assert fitting_dpi(595, 842, 110) == 110
    assert fitting_dpi(2384, 3370, 110) == 50
    assert fitting_dpi(2384, 3370, 110, max_pixels=100_000_000) == 110
    assert fitting_dpi(14400, 10, 110) == 110  # a long thin strip is small
    with pytest.raises(PageTooLargeError):
        fitting_dpi(14400, 14400, 110)
    with pytest.raises(PageTooLargeError, match="no area"):
        fitting_dpi(0, 842, 110)
    assert fitting_dpi(4800, 4800, 110) == MIN_DPI  # exactly 2000 x 2000 px at 30 dpi

"""The OCR language probe with the real Tesseract on scans the tests make, in both Chinese scripts,
plain and under a Latin title or a blank top half, and the failure it was rebuilt for."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from rag.ingest.ocr import find_tessdata, probe_script, script_of
from rag.ingest.ocr_probe import PROBE_DPI, probe_bands
from rag.text.script import to_traditional

pytestmark = pytest.mark.integration

SIMPLIFIED = ("经审理查明，原告与被告于二〇一五年签订房屋买卖合同，约定被告将其名下位于城区东路的一套住房出售给原告，"
              "总价款为八十万元。合同签订后，原告依约支付了首付款，但被告以房价上涨为由拒绝办理过户登记手续。"
              "原告多次催告无果，遂诉至本院，请求判令被告继续履行合同并承担本案诉讼费用。被告辩称，双方之间的"
              "合同因违反相关规定而无效，且原告未按时支付剩余价款，故不同意原告的诉讼请求。本院认为，当事人应当"
              "按照约定全面履行自己的义务，这是合同法的基本原则。")


def _scan(tmp_path: Path, script: str, top: str) -> Path:
    """A one-page scan of the judgment text in ``script``, under ``top`` (``title``, ``blank`` or nothing)."""
    text, font = (SIMPLIFIED, "china-s") if script == "chi_sim" else (to_traditional(SIMPLIFIED, "s2t"), "china-t")
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    first = {"title": 130.0, "blank": 430.0}.get(top, 60.0)
    if top == "title":
        page.insert_text((60, 90), "Civil Judgment No. 2019-0347", fontname="helv", fontsize=22)
    assert page.insert_textbox(pymupdf.Rect(60, first, 535, 800), text, fontname=font, fontsize=12,
                               lineheight=1.5) >= 0
    scan = pymupdf.open()
    scan.new_page(width=595, height=842).insert_image(pymupdf.Rect(0, 0, 595, 842),
                                                     pixmap=page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY))
    path = tmp_path / f"{script}-{top or 'plain'}.pdf"
    scan.save(path)
    return path


@pytest.mark.parametrize("top", ["", "title", "blank"])
@pytest.mark.parametrize("script", ["chi_sim", "chi_tra"])
def test_the_probe_reads_the_printed_script(tmp_path: Path, script: str, top: str) -> None:
    with pymupdf.open(_scan(tmp_path, script, top)) as doc:
        assert probe_script(doc[0], find_tessdata()) == script


def test_a_single_model_writes_its_own_script_whatever_is_printed(tmp_path: Path) -> None:
    # The mechanism behind the old probe's failure: chi_sim alone reads a traditional scan into
    # simplified characters, so counting the characters written cannot tell the scripts apart;
    # the probe still finds traditional from the glyphs and the mixed run together.
    tessdata = find_tessdata()
    with pymupdf.open(_scan(tmp_path, "chi_tra", "")) as doc:
        pixmap = doc[0].get_pixmap(dpi=PROBE_DPI, clip=probe_bands(doc[0])[0])
        pixmap.set_origin(0, 0)
        with pymupdf.open("pdf", pixmap.pdfocr_tobytes(language="chi_sim", tessdata=str(tessdata))) as read:
            written = read[0].get_text()
        assert len(written.strip()) > 20
        assert script_of(written) == "chi_sim"
        assert probe_script(doc[0], tessdata) == "chi_tra"

"""Which Tesseract language a scan without a text layer is in: ``eng``, ``chi_sim`` or ``chi_tra``.

A band of the page is read once with ``chi_sim+chi_tra``; Latin text means English. For Chinese, the
*characters* Tesseract writes say little about the printed script: each Chinese model writes nearly
every character in its own script whatever the glyph (on the probe set, ``chi_sim`` alone wrote 0–3
traditional-only characters on traditional pages, ``chi_tra`` alone 0–3 simplified-only ones on
simplified pages). In the mixed run each word goes to the model that is more confident, and
``chi_tra`` reads simplified glyphs almost as confidently as ``chi_sim`` does, so on a simplified page
the words split between the models nearly evenly (18 simplified-only vs 19 traditional-only on the
benchmark page that was misread). So two pieces of evidence are weighed:

* the share of script-specific characters the mixed run wrote in each script (the models' vote);
* the glyphs themselves (``rag.ingest.glyph_script``): for each character whose two forms differ
  (国/國, 这/這), whether the ink of its glyph cell is closer to the simplified or the traditional form.

The glyphs weigh more: the models' vote leans to ``chi_tra`` on simplified print (+0.72 on that
benchmark page), the glyph vote has no such lean once each character is measured on its own glyph.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pymupdf

from rag.ingest.glyph_script import INK_LEVEL, glyph_tally
from rag.text.language import detect_language

logger = logging.getLogger(__name__)

# Read by the probe. Both Chinese models read Latin text well, so English is told apart too.
PROBE_LANGUAGES = "chi_sim+chi_tra"
PROBE_BAND = 0.1  # share of the page height the probe reads
PROBE_DPI = 200
MAX_BANDS = 3
# chosen on the probe set (python -m rag.lab.ocr_probe_set; docs/documents.md), in the middle of the
# range that scored best there (64/64 for a stop of 20 characters or more, weight 1.5-5, margin 0.3-0.7)
MIN_EVIDENCE = 20  # script-specific characters after which no further band is read
GLYPH_WEIGHT = 2.0  # weight of the glyph vote against the models' vote
TRADITIONAL_MARGIN = 0.5  # the mixed run leans to chi_tra on simplified print: traditional must win by this
# frequent characters that differ between the scripts (from CMRC2018's text, ambiguous pairs removed)
_SIMPLIFIED = "为于国后学时个与会线长发体区东亚来现车开动尔电称内赛经间马对场这种当军队鱼龙号过设员业两进将岛语类数广约华条头达湾机关联罗从属们无战门则务兰运视传乐该陆铁总较统结实计说处获产单带点组纪应连县级离张侧黄选万画创参节书资气剧专历阳红风师权汉别认奥议义际转举维没据领变标还层术观论构亲见协决团质状职办卫兴镇"
_TRADITIONAL = "為於國後學時個與會線長發體區東亞來現車開動爾電稱內賽經間馬對場這種當軍隊魚龍號過設員業兩進將島語類數廣約華條頭達灣機關聯羅從屬們無戰門則務蘭運視傳樂該陸鐵總較統結實計說處獲產單帶點組紀應連縣級離張側黃選萬畫創參節書資氣劇專歷陽紅風師權漢別認奧議義際轉舉維沒據領變標還層術觀論構親見協決團質狀職辦衛興鎮"


def script_of(text: str) -> str:
    """The Tesseract language for ``text`` (a text layer): ``eng``, ``chi_sim`` or ``chi_tra``.

    Chinese is told apart by frequent characters that differ between the two scripts. ``chi_sim`` and
    ``chi_tra`` read Latin letters and digits well (99.8% on the English test scans), so a Chinese
    document needs no ``+eng``, which would halve the speed.
    """
    if detect_language(text) == "en":
        return "eng"
    return "chi_tra" if _model_vote(text) > 0 else "chi_sim"


def _model_vote(text: str) -> float:
    """(traditional - simplified) / both, over the script-specific characters of ``text``; 0 without any."""
    simplified = sum(text.count(char) for char in _SIMPLIFIED)
    traditional = sum(text.count(char) for char in _TRADITIONAL)
    return (traditional - simplified) / max(simplified + traditional, 1)


def _specific(text: str) -> int:
    """How many characters of ``text`` are specific to one script (in the frequent-character tables)."""
    return sum(text.count(char) for char in _SIMPLIFIED + _TRADITIONAL)


def probe_script(pdf_page: pymupdf.Page, tessdata: Path) -> str:
    """The Tesseract language of a scanned page, from bands of its densest text (a few seconds).

    Reading the whole page with several models costs twice a normal pass (Chinese is ~15 s a page
    here), so bands of about a tenth of the page are read, densest first, until they hold
    ``MIN_EVIDENCE`` characters that differ between the scripts (at most ``MAX_BANDS``): on real
    layouts the densest band is often a table of figures with a handful of Chinese words.
    """
    text, votes, counted = "", 0, 0
    for band in probe_bands(pdf_page)[:MAX_BANDS]:
        band_text, band_votes, band_counted = _read_band(pdf_page, band, tessdata)
        text, votes, counted = text + band_text, votes + band_votes, counted + band_counted
        if detect_language(text) == "en":
            return "eng"
        if _specific(text) >= MIN_EVIDENCE:
            break
    models, glyphs = _model_vote(text), votes / max(counted, 1)
    logger.info("OCR language probe: models' vote %.2f, glyph vote %.2f (%d characters)", models, glyphs, counted)
    return "chi_tra" if models + GLYPH_WEIGHT * glyphs > TRADITIONAL_MARGIN else "chi_sim"


def _read_band(pdf_page: pymupdf.Page, band: pymupdf.Rect, tessdata: Path) -> tuple[str, int, int]:
    """OCR of one band with ``PROBE_LANGUAGES``: its text and glyph tally (see ``glyph_tally``)."""
    pixmap = pdf_page.get_pixmap(dpi=PROBE_DPI, clip=band)  # RGB: Tesseract's PDF writer reads no grayscale here
    pixmap.set_origin(0, 0)
    with pymupdf.open("pdf", pixmap.pdfocr_tobytes(language=PROBE_LANGUAGES, tessdata=str(tessdata))) as probe:
        page = probe[0]
        chars = [(char["c"], char["bbox"]) for block in page.get_text("rawdict")["blocks"]
                 for line in block.get("lines", []) for span in line["spans"] for char in span["chars"]]
        text, scale = page.get_text(), pixmap.width / page.rect.width
    gray = pymupdf.Pixmap(pymupdf.csGRAY, pixmap)
    ink = np.frombuffer(gray.samples, dtype=np.uint8).reshape(gray.height, gray.stride)[:, :gray.width] < INK_LEVEL
    return (text, *glyph_tally(chars, ink, scale))


def probe_bands(pdf_page: pymupdf.Page) -> list[pymupdf.Rect]:
    """Bands of ``PROBE_BAND`` of the page height, most ink first, not overlapping, widened to blank rows.

    Rows inked across most of the page width are ruling lines, not text, and do not count.
    """
    small = pdf_page.get_pixmap(dpi=36, colorspace=pymupdf.csGRAY)
    image = np.frombuffer(small.samples, dtype=np.uint8).reshape(small.height, small.stride)[:, :small.width] < INK_LEVEL
    ink = image.sum(axis=1).astype(float)
    ink[ink > 0.6 * small.width] = 0
    size = max(1, int(small.height * PROBE_BAND))
    rect, bands = pdf_page.rect, []
    while ink.any() and len(bands) < MAX_BANDS:
        start = int(np.argmax(np.convolve(ink, np.ones(size), mode="valid"))) if len(ink) > size else 0
        end = min(small.height, start + size)
        while start > 0 and ink[start - 1]:
            start -= 1
        while end < small.height and ink[end]:
            end += 1
        ink[start:end] = 0
        bands.append(pymupdf.Rect(rect.x0, rect.y0 + rect.height * start / small.height,
                                  rect.x1, rect.y0 + rect.height * end / small.height))
    return bands or [rect]

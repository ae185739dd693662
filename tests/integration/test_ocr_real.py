"""OCR with the real Tesseract (Debian's language data, driven by PyMuPDF) on scans the tests make:
each fixture's text page is rendered to an image and put back as an image-only PDF of the same size."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from rag.answer.highlight import locate_passage, span_rects
from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from rag.ingest.parse import parse_file
from rag.index.store import DocumentStore
from rag.lab.ocr_scans import char_accuracy, rect_iou
from tests import fixtures

pytestmark = pytest.mark.integration

CASES = [  # (fixture, chosen Tesseract language, character accuracy target of the issue)
    (fixtures.make_english_pdf, "eng", 0.97),
    (fixtures.make_chinese_pdf, "chi_sim", 0.93),
    (fixtures.make_traditional_chinese_pdf, "chi_tra", 0.93),
]


@pytest.mark.parametrize(("make", "language", "target"), CASES, ids=["english", "simplified", "traditional"])
def test_scans_are_read_back_accurately_in_their_language(tmp_path: Path, make, language: str,
                                                          target: float) -> None:
    source = make(tmp_path)
    reference = parse_file(source)
    scanned = parse_file(fixtures.make_scanned_pdf(source, tmp_path))
    assert scanned.ocr_languages == language  # chosen from a first pass over the scan
    assert scanned.ocr_pages == [page.number for page in reference.pages]
    errors = characters = 0
    for ref_page, ocr_page in zip(reference.pages, scanned.pages):
        page_errors, page_chars = char_accuracy(ref_page.text, ocr_page.text, chinese=language != "eng")
        errors, characters = errors + page_errors, characters + page_chars
        assert all(ocr_page.text[w.start:w.end] == w.text for w in ocr_page.words)
    accuracy = 1 - errors / characters
    print(f"{language}: character accuracy {accuracy:.4f} over {characters} characters")
    assert accuracy >= target


def _true_rects(source: Path, phrase: str) -> list[list[float]]:
    """Where the text layer of the unscanned page has ``phrase`` (one rect per line)."""
    document = parse_file(source)
    for page in document.pages:
        start = page.text.find(phrase)
        if start >= 0:
            return [rect for _, rects in span_rects([page], start, start + len(phrase)) for rect in rects]
    raise AssertionError(f"{phrase!r} is not in {source.name}")


@pytest.mark.parametrize(("make", "phrase"), [
    (fixtures.make_english_pdf, "maximum daily dose of ibuprofen"),
    (fixtures.make_chinese_pdf, "布洛芬每日最大剂量"),  # wraps after 每 onto the next line
], ids=["english", "chinese-wrapped"])
def test_highlights_on_an_ocrd_page_land_on_the_words(store: DocumentStore, config: RagConfig, tmp_path: Path,
                                                      make, phrase: str) -> None:
    source = make(tmp_path)
    result = Ingestor(store, config).ingest_path(fixtures.make_scanned_pdf(source, tmp_path))
    assert result.ok and result.ocr_pages == "1-3", (result.error, result.notes)
    assert store.document(result.doc_id).ocr_pages == "1-3"
    chunk = next(c for c in store.chunks(result.doc_id) if phrase in c.text)
    found = locate_passage(store, chunk, phrase)
    assert [page for page, _ in found] == [2]
    got = [rect for _, rects in found for rect in rects]
    truth = _true_rects(source, phrase)
    assert len(got) == len(truth)  # one rect per printed line (two for the wrapped Chinese phrase)
    assert rect_iou(truth, got) >= 0.6


def test_only_the_scanned_page_of_a_text_pdf_is_ocrd(tmp_path: Path) -> None:
    source = fixtures.make_english_pdf(tmp_path)
    mixed = parse_file(fixtures.make_scanned_pdf(source, tmp_path, pages=[1]))
    original = parse_file(source)
    assert mixed.ocr_pages == [2] and mixed.ocr_languages == "eng"  # the language of the text pages
    assert mixed.pages[0].text == original.pages[0].text and mixed.pages[2].text == original.pages[2].text
    errors, characters = char_accuracy(original.pages[1].text, mixed.pages[1].text, chinese=False)
    assert 1 - errors / characters >= 0.97
    assert fixtures.EN_FACT in mixed.pages[1].text


def test_a_blank_scan_is_reported_as_having_no_text(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    blank = pymupdf.Pixmap(pymupdf.csGRAY, pymupdf.IRect(0, 0, 300, 400), False)
    blank.set_rect(blank.irect, (255,))
    page.insert_image(page.rect, pixmap=blank)
    path = tmp_path / "blank-scan.pdf"
    doc.save(path)
    from rag.ingest.parse import NoTextError

    with pytest.raises(NoTextError, match="it has no text layer, and OCR .* found no text"):
        parse_file(path)

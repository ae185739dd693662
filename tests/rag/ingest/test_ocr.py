"""OCR plumbing that needs no Tesseract run: finding the language data, clear errors when it is
missing, choosing the script, and turning Tesseract's characters into words with boxes."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from rag.ingest import pdf_pages
from rag.ingest.ocr import OcrUnavailableError, find_tessdata, ocr_layout, require_languages, script_of
from rag.ingest.parse import NoTextError, parse_file
from rag.ingest.pdf_pages import assemble
from tests import fixtures


def _no_tesseract(monkeypatch) -> None:
    """Make the parser see a machine without Tesseract's language data."""
    monkeypatch.setattr(pdf_pages, "find_tessdata",
                        functools.partial(find_tessdata, env={}, patterns=(), ask_tesseract=False))


def test_tessdata_is_found_from_an_explicit_folder_or_the_environment(tmp_path: Path) -> None:
    (tmp_path / "eng.traineddata").write_bytes(b"x")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert find_tessdata(str(tmp_path), env={}, patterns=(), ask_tesseract=False) == tmp_path
    assert find_tessdata("", env={"TESSDATA_PREFIX": str(tmp_path)}, patterns=(), ask_tesseract=False) == tmp_path
    # a folder without language data is passed over for the next candidate
    assert find_tessdata(str(empty), env={}, patterns=(str(tmp_path),), ask_tesseract=False) == tmp_path


def test_without_tesseract_the_error_names_the_packages_to_install() -> None:
    with pytest.raises(OcrUnavailableError) as caught:
        find_tessdata("", env={}, patterns=(), ask_tesseract=False)
    message = str(caught.value)
    for package in ("tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-chi-sim", "tesseract-ocr-chi-tra"):
        assert package in message
    assert "apt-get install" in message


def test_a_missing_language_names_its_package(tmp_path: Path) -> None:
    (tmp_path / "eng.traineddata").write_bytes(b"x")
    require_languages(tmp_path, "eng")
    with pytest.raises(OcrUnavailableError, match=r"chi_tra .*tesseract-ocr-chi-tra"):
        require_languages(tmp_path, "eng+chi_tra")


def test_a_scan_without_tesseract_fails_naming_the_package(tmp_path: Path, monkeypatch) -> None:
    _no_tesseract(monkeypatch)
    scan = fixtures.make_scanned_pdf(fixtures.make_english_pdf(tmp_path), tmp_path)
    with pytest.raises(NoTextError) as caught:
        parse_file(scan)
    message = str(caught.value)
    assert message.startswith("scanned.pdf has no text layer") and "tesseract-ocr-eng" in message


def test_a_scanned_page_inside_a_text_pdf_without_tesseract_keeps_the_other_pages(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    _no_tesseract(monkeypatch)
    mixed = fixtures.make_scanned_pdf(fixtures.make_english_pdf(tmp_path), tmp_path, pages=[1])
    document = parse_file(mixed)
    assert document.pages[0].text and document.pages[2].text and not document.pages[1].text
    [note] = document.notes
    assert note.startswith("page 2: no text layer and not OCR'd: OCR needs Tesseract's language data")
    assert "tesseract-ocr-eng" in note and document.ocr_pages == []


def test_ocr_can_be_turned_off_and_says_so(tmp_path: Path) -> None:
    from rag.ingest.options import ParseOptions

    mixed = fixtures.make_scanned_pdf(fixtures.make_english_pdf(tmp_path), tmp_path, pages=[2])
    document = parse_file(mixed, options=ParseOptions(ocr=False))
    assert document.notes == ["page 3: no text layer; OCR is turned off (ingest.ocr)"]


def test_pages_over_the_ocr_limit_are_noted_not_read(tmp_path: Path, monkeypatch) -> None:
    from rag.ingest.options import ParseOptions

    _no_tesseract(monkeypatch)  # the limit is applied before any OCR would run
    scan = fixtures.make_scanned_pdf(fixtures.make_english_pdf(tmp_path, pages=4), tmp_path, pages=[1, 2, 3])
    document = parse_file(scan, options=ParseOptions(max_ocr_pages=1))
    assert document.notes[0] == ("pages 3-4: not OCR'd: a document may have at most 1 OCR'd pages "
                                 "(storage.max_ocr_pages)")
    assert document.notes[1].startswith("page 2: no text layer and not OCR'd")


@pytest.mark.parametrize(("text", "script"), [
    ("The maximum daily dose of ibuprofen for adults is 1200 milligrams.", "eng"),
    (fixtures.ZH_FACT + fixtures.ZH_RESULT + "这是一个关于研究的报告。", "chi_sim"),
    (fixtures.ZH_TRAD_FACT + "參與者每天記錄疼痛程度，這是一個關於研究的報告。", "chi_tra"),
])
def test_the_script_decides_the_tesseract_language(text: str, script: str) -> None:
    assert script_of(text) == script


def _char(c: str, x0: float, y0: float = 100.0, width: float = 10.0) -> dict:
    return {"c": c, "bbox": (x0, y0, x0 + width, y0 + 12)}


class _TextPage:
    """What ``extractRAWDICT`` returns for an OCR'd page, given Tesseract's lines."""

    def __init__(self, *lines: list[dict]) -> None:
        self.lines = lines

    def extractRAWDICT(self) -> dict:  # noqa: N802 - PyMuPDF's name
        lines = []
        for chars in self.lines:
            boxes = [c["bbox"] for c in chars]
            bbox = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                    max(b[3] for b in boxes))
            lines.append({"bbox": bbox, "spans": [{"chars": chars}]})
        return {"blocks": [{"lines": lines}]}


def _page_of(*lines: list[dict]):
    import pymupdf

    page, _ = assemble(ocr_layout(_TextPage(*lines)), 1, pymupdf.Rect(0, 0, 600, 800), table_max_tokens=220)
    assert all(page.text[w.start:w.end] == w.text for w in page.words)
    return page


def test_ocr_chinese_is_one_word_per_character_without_tesseracts_spaces() -> None:
    chars = [_char(c, 50 + 12 * i) for i, c in enumerate("布 洛 芬 每 日")]  # Tesseract's spaces included
    page = _page_of(chars + [_char(" ", 200), _char("1", 210), _char(" ", 216),
                    _char("2", 220), _char(" ", 226), _char("0", 230), _char(" ", 236), _char("0", 240),
                    _char("毫", 252), _char("克", 264)])
    assert page.text == "布洛芬每日1200毫克"
    assert [w.text for w in page.words][:3] == ["布", "洛", "芬"]
    assert page.words[1].box == (74.0, 100.0, 84.0, 112.0)  # each character keeps its own box (洛)


def test_ocr_english_words_keep_their_spaces_and_boxes() -> None:
    line = [_char(c, 50 + 8 * i, width=7) for i, c in enumerate("dose is 1200 mg")]
    page = _page_of(line)
    assert page.text == "dose is 1200 mg"
    assert [(w.text, w.box[0]) for w in page.words] == [("dose", 50.0), ("is", 90.0), ("1200", 114.0),
                                                         ("mg", 154.0)]


def test_pieces_of_one_printed_line_are_rejoined_left_to_right() -> None:
    # Tesseract cut the line in two and listed the right piece first; they even overlap a little
    right = [_char(c, 120 + 12 * i) for i, c in enumerate("疼痛减轻")]
    left = [_char(c, 50 + 12 * i) for i, c in enumerate("两小时内报告")]
    below = [_char(c, 50 + 12 * i, y0=118) for i, c in enumerate("九成参与者")]
    page = _page_of(right, left, below)
    # one paragraph: the wrapped Chinese line continues without a line break, as on text pages
    assert page.text == "两小时内报告疼痛减轻九成参与者"


def test_a_page_that_ocr_cannot_read_is_noted_and_the_rest_is_kept(tmp_path: Path, monkeypatch) -> None:
    from rag.ingest.options import ParseOptions

    (tmp_path / "eng.traineddata").write_bytes(b"x")
    monkeypatch.setattr(pdf_pages, "find_tessdata", lambda explicit="": tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("tesseract crashed")

    monkeypatch.setattr(pdf_pages, "ocr_textpage", broken)
    mixed = fixtures.make_scanned_pdf(fixtures.make_english_pdf(tmp_path), tmp_path, pages=[1])
    document = parse_file(mixed, options=ParseOptions(ocr_languages="eng"))
    assert document.notes == ["page 2: OCR failed (RuntimeError: tesseract crashed); the page has no text"]
    assert document.pages[0].text and not document.pages[1].text and document.ocr_pages == []

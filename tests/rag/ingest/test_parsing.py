from __future__ import annotations

import shutil
from pathlib import Path

import pymupdf
import pytest

from rag.documents import ParsedDocument
from rag.ingest.parse import (
    CorruptFileError,
    EmptyDocumentError,
    EncryptedFileError,
    NoTextError,
    ParseError,
    UnsupportedFileError,
    parse_bytes,
    parse_file,
)
from rag.ingest.parse_errors import sniff_kind
from tests import fixtures


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every fixture document, written once for the module."""
    directory = tmp_path_factory.mktemp("docs")
    for maker in (fixtures.make_english_pdf, fixtures.make_chinese_pdf, fixtures.make_docx,
                  fixtures.make_markdown, fixtures.make_html, fixtures.make_txt, fixtures.make_injection_pdf):
        maker(directory)
    return directory


@pytest.fixture(scope="module")
def english(files: Path) -> ParsedDocument:
    return parse_file(files / "report.pdf")


@pytest.fixture(scope="module")
def chinese(files: Path) -> ParsedDocument:
    return parse_file(files / "chinese.pdf")


def squash(text: str) -> str:
    return " ".join(text.split())


def assert_word_offsets_exact(document: ParsedDocument) -> None:
    for page in document.pages:
        assert page.words, f"page {page.number} has no words"
        for word in page.words:
            assert page.text[word.start:word.end] == word.text
            x0, y0, x1, y1 = word.box
            assert 0 <= x0 < x1 <= page.width and 0 <= y0 < y1 <= page.height
        starts = [word.start for word in page.words]
        assert starts == sorted(starts)


# --- PDF -------------------------------------------------------------------------------------------


def test_english_pdf_pages_text_and_title(english: ParsedDocument) -> None:
    assert english.file_type == "pdf" and english.file_name == "report.pdf"
    assert [page.number for page in english.pages] == [1, 2, 3]
    assert english.title == fixtures.EN_TITLE
    assert english.pages[0].width == pytest.approx(595, abs=1)
    assert english.pages[0].height == pytest.approx(842, abs=1)
    assert fixtures.EN_FACT in english.pages[1].text
    assert fixtures.EN_RESULT in english.pages[2].text


def test_text_set_sideways_in_the_margin_is_never_the_title(tmp_path: Path) -> None:
    """arXiv stamps its identifier up the left margin of page 1, larger than the paper's title."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((30, 600), "arXiv:2310.11511v1 [cs.CL] 17 Oct 2023", fontsize=20, rotate=90)
    page.insert_text((100, 100), "Learning to Retrieve and Critique", fontsize=16)
    page.insert_textbox(pymupdf.Rect(100, 140, 520, 700), "Body text of the paper goes on here. " * 40, fontsize=10)
    doc.save(tmp_path / "stamped.pdf")
    doc.close()
    assert parse_file(tmp_path / "stamped.pdf").title == "Learning to Retrieve and Critique"


def test_a_font_name_left_as_the_metadata_title_is_not_the_title(tmp_path: Path) -> None:
    """Ghostscript re-distilling a TeX paper leaves one of its fonts' names ("CMR10") as the document-info title."""
    def make(name: str, metadata_title: str) -> Path:
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_text((100, 100), "Pitfalls of Areal Count Models", fontsize=18, fontname="Times-Bold")
        page.insert_textbox(pymupdf.Rect(100, 140, 520, 700), "Body text of the paper goes on here. " * 40,
                            fontsize=10, fontname="Courier")
        doc.set_metadata({"title": metadata_title})
        doc.save(tmp_path / name)
        doc.close()
        return tmp_path / name

    assert parse_file(make("font.pdf", "Courier")).title == "Pitfalls of Areal Count Models"
    assert parse_file(make("bold.pdf", "times-bold")).title == "Pitfalls of Areal Count Models"
    assert parse_file(make("named.pdf", "Areal Count Data")).title == "Areal Count Data"


def test_a_title_broken_over_lines_is_read_whole(tmp_path: Path) -> None:
    """LaTeX sets each line of a title broken with "\\\\" as a block of its own."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((100, 100), "Inventory of continuous and discrete", fontsize=17)
    page.insert_text((160, 140), "distributions in actuar", fontsize=17)
    page.insert_text((200, 190), "Christophe Dutang", fontsize=12)
    page.insert_textbox(pymupdf.Rect(100, 220, 520, 700), "Body text of the paper goes on here. " * 40, fontsize=10)
    doc.save(tmp_path / "broken.pdf")
    doc.close()
    assert parse_file(tmp_path / "broken.pdf").title == "Inventory of continuous and discrete distributions in actuar"


def test_english_pdf_word_offsets_are_exact(english: ParsedDocument) -> None:
    assert_word_offsets_exact(english)
    fact_words = [word.text for word in english.pages[1].words if word.text in {"ibuprofen", "1200"}]
    assert fact_words == ["ibuprofen", "1200"]


def test_wrapped_sentence_keeps_lines_but_reads_whole(english: ParsedDocument) -> None:
    page_text = english.pages[0].text
    assert fixtures.EN_WRAPPED not in page_text  # it wraps, so a newline sits inside it
    assert fixtures.EN_WRAPPED in squash(page_text)
    assert "\n\n" in page_text  # paragraphs stay apart


def test_line_end_hyphenation_is_undone_with_exact_offsets(english: ParsedDocument) -> None:
    page = english.pages[0]
    assert fixtures.EN_HYPHENATED in page.text
    inter = next(word for word in page.words if word.text == "inter")
    national = page.words[page.words.index(inter) + 1]
    assert national.text == "national" and national.start == inter.end
    assert national.box[1] > inter.box[1]  # the second half is on the next line


def test_pdf_sections_come_from_the_outline(english: ParsedDocument) -> None:
    sections = [(s.title, s.level, s.page) for s in english.sections]
    assert sections == [("Introduction", 1, 1), ("Methods", 1, 2), ("Dosage Study", 2, 2), ("Results", 1, 3)]
    text = english.full_text
    for section in english.sections:
        assert text[section.offset:section.offset + len(section.title)] == section.title


def test_pdf_sections_fall_back_to_font_sizes(tmp_path: Path) -> None:
    document = parse_file(fixtures.make_english_pdf(tmp_path, "no-toc.pdf", toc=False))
    sections = [(s.title, s.level, s.page) for s in document.sections]
    assert sections == [("Introduction", 1, 1), ("Methods", 1, 2), ("Dosage Study", 2, 2), ("Results", 1, 3)]
    for section in document.sections:
        assert document.full_text.startswith(section.title, section.offset)


def test_many_pages(tmp_path: Path) -> None:
    document = parse_file(fixtures.make_english_pdf(tmp_path, "long.pdf", pages=6))
    assert len(document.pages) == 6
    assert [s.title for s in document.sections][-3:] == ["Appendix 1", "Appendix 2", "Appendix 3"]
    assert "supporting table number 6" in squash(document.pages[5].text)


def test_chinese_pdf_text_offsets_and_wrapping(chinese: ParsedDocument) -> None:
    assert chinese.title == fixtures.ZH_TITLE
    assert_word_offsets_exact(chinese)
    page = chinese.pages[1]
    # the fact is split over two lines in the PDF (no single word holds it) but reads whole
    assert not any(fixtures.ZH_FACT in word.text for word in page.words)
    assert fixtures.ZH_FACT in page.text
    assert fixtures.ZH_RESULT in chinese.pages[2].text
    assert [(s.title, s.page) for s in chinese.sections] == [("引言", 1), ("方法", 2), ("结果", 3)]
    assert all(chinese.full_text.startswith(s.title, s.offset) for s in chinese.sections)


def test_injection_text_is_extracted_verbatim(files: Path) -> None:
    document = parse_file(files / "injection.pdf")
    assert fixtures.INJECTION_TEXT in squash(document.full_text)


def test_file_name_overrides_the_stored_name(files: Path, tmp_path: Path) -> None:
    stored = tmp_path / "3f2a9c"  # uploads are stored under a hash, without an extension
    shutil.copy(files / "report.pdf", stored)
    document = parse_file(stored, file_name="My Report.pdf")
    assert document.file_name == "My Report.pdf" and document.file_type == "pdf"


def test_pdf_content_wins_over_a_wrong_extension(files: Path) -> None:
    document = parse_bytes((files / "report.pdf").read_bytes(), "report.txt")
    assert document.file_type == "pdf"


# --- bad inputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("maker", "error", "phrase"),
    [
        (fixtures.make_corrupt_pdf, CorruptFileError, "is damaged and cannot be opened as a PDF"),
        (fixtures.make_encrypted_pdf, EncryptedFileError, "is password-protected"),
        (fixtures.make_zero_page_pdf, EmptyDocumentError, "has no pages"),
        (fixtures.make_image_only_pdf, NoTextError,
         "no extractable text: it has no text layer, and OCR (Tesseract, eng) found no text on its pages"),
        (fixtures.make_fake_pdf, CorruptFileError, "is not a PDF (content looks like a PNG image)"),
        (lambda d: fixtures.make_fake_pdf(d, "notes.pdf", kind="text"), CorruptFileError,
         "is not a PDF (content looks like plain text)"),
    ],
    ids=["corrupt", "encrypted", "zero-pages", "image-only", "png-renamed", "text-renamed"],
)
def test_bad_pdfs_raise_specific_errors(tmp_path: Path, maker, error: type[ParseError], phrase: str) -> None:
    path = maker(tmp_path)
    with pytest.raises(error) as caught:
        parse_file(path)
    message = str(caught.value)
    assert message.startswith(path.name) and phrase in message
    assert isinstance(caught.value, ValueError)


def test_truncated_pdf_is_corrupt(files: Path) -> None:
    data = (files / "report.pdf").read_bytes()
    with pytest.raises(CorruptFileError, match="damaged"):
        parse_bytes(data[: len(data) // 3], "cut.pdf")


@pytest.mark.parametrize(
    ("name", "data", "error", "phrase"),
    [
        ("empty.txt", b"", EmptyDocumentError, "is empty (0 bytes)"),
        ("blank.md", b"  \n\n \t", NoTextError, "contains no text"),
        ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), UnsupportedFileError,
         "not a supported file type (content looks like a PNG image)"),
        ("sheet.xlsx", b"just text", UnsupportedFileError, "supported types: docx, htm, html"),
        ("image.txt", b"\x89PNG\r\n\x1a\n" + bytes(64), CorruptFileError,
         "is not a text file (content looks like a PNG image)"),
        ("letter.docx", b"plain words", CorruptFileError, "is not a .docx Word document"),
        ("broken.docx", b"PK\x03\x04" + bytes(100), CorruptFileError, "could not be read as a Word document"),
    ],
    ids=["zero-bytes", "whitespace-only", "unsupported-image", "unsupported-ext", "binary-as-text",
         "text-as-docx", "damaged-docx"],
)
def test_other_bad_inputs(name: str, data: bytes, error: type[ParseError], phrase: str) -> None:
    with pytest.raises(error) as caught:
        parse_bytes(data, name)
    assert str(caught.value).startswith(name) and phrase in str(caught.value)


def test_unreadable_path_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="missing.pdf could not be read"):
        parse_file(tmp_path / "missing.pdf")


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"%PDF-1.7\n", "a PDF"),
        (b"\xff\xd8\xff\xe0rest", "a JPEG image"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy Office document (.doc/.xls/.ppt)"),
        (b"<!DOCTYPE html><html>", "an HTML page"),
        (b"hello world\n", "plain text"),
        (bytes(range(256)), "binary data"),
    ],
)
def test_sniff_kind(data: bytes, kind: str) -> None:
    assert sniff_kind(data) == kind


# --- other formats ---------------------------------------------------------------------------------


def test_docx(files: Path) -> None:
    document = parse_file(files / "guide.docx")
    assert document.file_type == "docx" and document.title == "Dosage Guide"
    assert len(document.pages) == 1 and document.pages[0].number == 1 and not document.pages[0].words
    assert fixtures.EN_FACT in document.full_text
    assert "Ibuprofen | 1200 mg" in document.full_text
    titles = [(s.title, s.level) for s in document.sections]
    assert titles == [("Dosage Guide", 1), ("Adults", 1), ("Children", 2)]
    assert all(document.full_text.startswith(s.title, s.offset) for s in document.sections)


def test_markdown(files: Path) -> None:
    document = parse_file(files / "guide.md")
    assert document.file_type == "md" and document.title == "Dosage Guide"
    assert fixtures.EN_FACT in document.full_text
    assert [(s.title, s.level) for s in document.sections] == [("Dosage Guide", 1), ("Adults", 2),
                                                               ("Children", 2)]
    assert document.full_text[document.sections[1].offset:].startswith("## Adults")


def test_html_keeps_only_visible_text(files: Path) -> None:
    document = parse_file(files / "guide.html")
    text = document.full_text
    assert document.file_type == "html" and document.title == "Dosage Guide"
    assert fixtures.SCRIPT_TEXT not in text and "script" not in text.lower()
    assert "<" not in text and "color: red" not in text and "hidden comment" not in text
    assert "Home" not in text  # navigation is dropped
    assert "This guide summarises safe use of common pain medicines." in text
    assert fixtures.EN_FACT in text
    assert "Medicine | Limit\nIbuprofen | 1200 mg" in text
    assert [(s.title, s.level) for s in document.sections] == [("Dosage Guide", 1), ("Adults", 2),
                                                               ("Children", 2)]
    assert all(text.startswith(s.title, s.offset) for s in document.sections)


def test_txt_utf8_with_crlf(files: Path) -> None:
    document = parse_file(files / "notes.txt")
    assert document.file_type == "txt" and document.title == "notes.txt"
    assert "\r" not in document.full_text
    assert f"{fixtures.EN_FACT}\n{fixtures.EN_RESULT}" in document.full_text


@pytest.mark.parametrize("encoding", ["utf-8", "gb18030", "utf-16"])
def test_txt_chinese_encodings(tmp_path: Path, encoding: str) -> None:
    document = parse_file(fixtures.make_txt(tmp_path, f"zh-{encoding}.txt", chinese=True, encoding=encoding))
    assert fixtures.ZH_FACT in document.full_text


def test_txt_latin1_fallback(tmp_path: Path) -> None:
    path = tmp_path / "cafe.txt"
    path.write_bytes("Le café est fermé à midi.".encode("latin-1"))
    assert parse_file(path).full_text == "Le café est fermé à midi."

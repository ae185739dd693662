"""A footnote mark set as a superscript against a word is a word of its own; an exponent stays on its number or
unit."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rag.ingest.parse import parse_file

MARK_SHARE = 0.7  # LaTeX sets a mark at about 0.7 of the text size, raised by about a third of it


def _page(path: Path, pieces: list[tuple[str, str, str]]) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    for number, (base, mark, font) in enumerate(pieces):
        y = 100 + 30 * number
        page.insert_text((72, y), base, fontname=font, fontsize=10)
        width = pymupdf.get_text_length(base, fontname=font, fontsize=10)
        page.insert_text((72 + width, y - 3.5), mark, fontname=font, fontsize=10 * MARK_SHARE)
    doc.save(path)
    doc.close()
    return path


def test_marks_after_words_are_cut_off_and_keep_their_part_of_the_box(tmp_path: Path) -> None:
    pdf = _page(tmp_path / "notes.pdf", [("Windows", "3", "tiro"), ("\\micro", "a", "tiro"),
                                         ("see the manual.", "1", "tiro"), ("微软雅黑", "6", "china-s"),
                                         ("radian", "b c", "tiro"), ("neper", "d", "tiro")])
    doc = pymupdf.open(pdf)  # a second note right after the first: "neper" with notes d and e
    page = doc[0]
    page.insert_text((72 + pymupdf.get_text_length("neper", fontname="tiro", fontsize=10)
                      + pymupdf.get_text_length("d", fontname="tiro", fontsize=10 * MARK_SHARE), 250 - 3.5), "e",
                     fontname="helv", fontsize=10 * MARK_SHARE)  # another font: a span of its own, as in SIunits
    doc.save(tmp_path / "notes2.pdf")
    doc.close()
    page = parse_file(tmp_path / "notes2.pdf").pages[0]

    assert page.text.split("\n\n") == ["Windows 3", "\\micro a", "see the manual. 1", "微软雅黑 6",
                                           "radian b c", "neper d e"]  # two notes in one span; in two
    words = {word.text: word for word in page.words}
    assert page.text[words["Windows"].start:words["Windows"].end] == "Windows"
    width = pymupdf.get_text_length("Windows", fontname="tiro", fontsize=10)
    assert abs(words["Windows"].box[2] - (72 + width)) < 0.5  # the word's box ends where its mark begins
    assert abs(words["3"].box[0] - (72 + width)) < 0.5


def test_exponents_after_figures_units_and_short_names_stay(tmp_path: Path) -> None:
    pdf = _page(tmp_path / "exponents.pdf", [("area 5 m", "2", "tiro"), ("value 10", "6", "tiro"),
                                             ("flow 3 cm", "3", "tiro"), ("the 2", "nd", "tiro")])

    assert parse_file(pdf).pages[0].text.split("\n\n") == ["area 5 m2", "value 106", "flow 3 cm3", "the 2nd"]


def test_a_raised_piece_as_large_as_its_line_is_not_a_mark(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Windows", fontname="tiro", fontsize=10)
    page.insert_text((72 + pymupdf.get_text_length("Windows", fontname="tiro", fontsize=10), 96.5), "XP",
                     fontname="tiro", fontsize=10)
    doc.save(tmp_path / "raised.pdf")
    doc.close()

    assert parse_file(tmp_path / "raised.pdf").pages[0].text == "WindowsXP"

"""Tables of aligned text found by their "Table N" caption, with no rules drawn (``rag.ingest.caption_tables``)."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rag.ingest.parse import parse_file

PROSE = ("Retrieval helps most on long-tail questions, where the model has seen the entity rarely in "
         "pretraining. We therefore report results per popularity bucket and discuss the failure cases "
         "in the appendix, together with the prompts that every baseline used in our experiments. ") * 3


def _two_column_page(path: Path, *, table: bool) -> Path:
    """A paper page in two columns; the left column holds "Table 3" (rows of figures over their caption) when
    ``table``, and the right column running text from top to bottom."""
    doc = pymupdf.open()
    page = doc.new_page()  # 612 x 792
    y = 90.0
    if table:
        for row in (("Split", "Train", "Test"), ("QQP 50K", "46,000", "4,000"), ("MSRPC", "2,203", "1,147"),
                    ("ParaSCI ACL", "28,883", "2,345")):
            for x, text in zip((60.0, 170.0, 230.0), row):
                page.insert_text((x, y), text, fontname="tiro", fontsize=9)
            y += 13
        page.insert_text((60, y + 10), "Table 3: Dataset split sizes.", fontname="tiro", fontsize=9)
    page.insert_textbox(pymupdf.Rect(60, y + 30, 290, 740), PROSE, fontname="tiro", fontsize=9)
    page.insert_textbox(pymupdf.Rect(320, 80, 552, 740), PROSE, fontname="tiro", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_rows_of_figures_over_a_caption_in_one_column_are_a_table(tmp_path: Path) -> None:
    page = parse_file(_two_column_page(tmp_path / "paper.pdf", table=True)).pages[0]
    assert len(page.tables) == 1
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| MSRPC | 2,203 | 1,147 |" in table
    assert "Retrieval" not in table  # the other column's text stays running text
    running = page.text[:page.tables[0].start] + page.text[page.tables[0].end:]
    assert "2,203" not in running


def test_two_columns_of_prose_under_a_caption_are_no_table(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((230, 70), "Table 1: Prompt lines used.", fontname="tiro", fontsize=9)  # its table is elsewhere
    page.insert_textbox(pymupdf.Rect(60, 90, 290, 740), PROSE, fontname="tiro", fontsize=9)
    page.insert_textbox(pymupdf.Rect(320, 90, 552, 740), PROSE, fontname="tiro", fontsize=9)
    doc.save(tmp_path / "prose.pdf")
    doc.close()
    assert parse_file(tmp_path / "prose.pdf").pages[0].tables == []


def test_a_chinese_table_under_its_wrapped_caption(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    caption = "表5.1: 字体命令。声明形式的命令影响其后的全部文字，带参数形式的命令只影响参数里的"
    page.insert_text((100, 80), caption, fontname="china-s", fontsize=9)
    page.insert_text((100, 92), "文字。", fontname="china-s", fontsize=9)
    y = 112.0
    for row in (("\\rmfamily", "\\textrm{...}", "衬线字体"), ("\\bfseries", "\\textbf{...}", "粗体"),
                ("\\itshape", "\\textit{...}", "意大利斜体"), ("\\ttfamily", "\\texttt{...}", "等宽字体")):
        for x, text in zip((100.0, 200.0, 320.0), row):
            page.insert_text((x, y), text, fontname="china-s", fontsize=9)
        y += 13
    after = "这些命令可以嵌套使用，在正文里切换字体时应当尽量使用带参数的形式，以免影响后面的文字。"
    page.insert_text((100, y + 20), after, fontname="china-s", fontsize=9)
    doc.save(tmp_path / "zh.pdf")
    doc.close()
    page = parse_file(tmp_path / "zh.pdf").pages[0]
    assert len(page.tables) == 1
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| \\bfseries | \\textbf{...} | 粗体 |" in table
    assert table.startswith(caption + "\n文字。\n| \\rmfamily |")  # the wrapped caption heads the table, no row
    assert "嵌套" not in table  # the text under it stays running text


def _units_page(path: Path, *, heading: bool) -> Path:
    """SIunits' page 10: Table 1 between rules with its caption over it, then "Table 2: …" a few lines under Table 1
    over rows of aligned text with no rule under them; with ``heading``, a numbered section heading follows the
    rows after a blank line, set out at the text's left edge."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((200, 90), "Table 1: SI base units", fontname="tiro", fontsize=10)
    y = 112.0
    page.draw_line((195, y - 10), (440, y - 10), width=0.5)
    for number, row in enumerate((("Quantity", "Name", "Symbol"), ("length", "metre", "m"), ("mass", "kilogram", "kg"),
                                  ("time", "second", "s"))):
        for x, text in zip((200.0, 330.0, 400.0), row):
            page.insert_text((x, y), text, fontname="tiro", fontsize=10)
        if number == 0:
            page.draw_line((195, y + 3), (440, y + 3), width=0.5)
        y += 13
    page.draw_line((195, y - 8), (440, y - 8), width=0.5)
    y += 14
    page.insert_text((160, y), "Table 2: Examples of SI derived units", fontname="tiro", fontsize=10)
    y += 22
    for row in (("Derived quantity", "Name", "Symbol"), ("area", "square metre", "m2"), ("volume", "cubic metre", "m3"),
                ("current density", "ampere per square metre", "A/m2"), ("luminance", "candela per square metre",
                                                                         "cd/m2")):
        for x, text in zip((160.0, 300.0, 440.0), row):
            page.insert_text((x, y), text, fontname="tiro", fontsize=10)
        y += 14
    if heading:
        page.insert_text((100, y + 24), "3.2.2", fontname="tiro", fontsize=10)
        page.insert_text((140, y + 24), "The degree Celsius", fontname="tiro", fontsize=10)
        y += 24
    page.insert_textbox(pymupdf.Rect(100, y + 20, 520, y + 120), PROSE, fontname="tiro", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def test_a_caption_a_few_lines_under_a_captioned_table_heads_the_table_below_it(tmp_path: Path) -> None:
    page = parse_file(_units_page(tmp_path / "units.pdf", heading=False)).pages[0]
    assert [span.caption for span in page.tables] == ["Table 1: SI base units", "Table 2: Examples of SI derived units"]
    assert "| current density | ampere per square metre | A/m2 |" in page.text[page.tables[1].start:page.tables[1].end]


def test_a_heading_set_out_after_the_rows_ends_the_table(tmp_path: Path) -> None:
    page = parse_file(_units_page(tmp_path / "units.pdf", heading=True)).pages[0]
    table = page.text[page.tables[1].start:page.tables[1].end]
    assert "| luminance | candela per square metre | cd/m2 |" in table
    assert "Celsius" not in table

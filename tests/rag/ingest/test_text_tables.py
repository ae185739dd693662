"""Tables set as bare aligned text (no lines at all) next to a "Table N" caption, as some papers print them."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rag.ingest.parse import parse_file

LEFT_COLUMNS = (54.0, 150.0, 200.0, 250.0)  # a two-column page's left column ends at 290
ROWS = [("Method", "QQP", "MSRPC", "ACL"),
        ("Baselines", None, None, None),  # a group heading: one short run
        ("Fine Tuning", "38.02", "34.49", "33.66"),
        ("LoRA", "37.89", "33.62", "33.22"),
        ("NC-RAPT (High)", "42.72", "39.50", "41.30")]
PROSE = ("Here the ground truth paraphrase is kept for every input and the same global prefix serves all "
         "novelty classes so that the model learns from the prefix and the infix of one class at a time.")
RIGHT_PROSE = ("The right column carries on with running text that sits level with the table in the left "
               "column and must never be read into it, however the lines happen to align.")


def _page(path: Path, rows, *, caption_below: bool = True, caption: str = "Table 4: SARI of each method.") -> Path:
    doc = pymupdf.open()
    page = doc.new_page()  # 595 x 842
    page.insert_textbox(pymupdf.Rect(310, 60, 545, 400), RIGHT_PROSE * 3, fontname="tiro", fontsize=9)
    y = 80.0
    if not caption_below:
        page.insert_text((54, y), caption, fontname="tiro", fontsize=9)
        y += 20
    for row in rows:
        for x, text in zip(LEFT_COLUMNS, row):
            if text:
                page.insert_text((x, y), text, fontname="tiro", fontsize=9)
        y += 12
    if caption_below:
        page.insert_text((54, y + 6), caption, fontname="tiro", fontsize=9)
        y += 20
    page.insert_textbox(pymupdf.Rect(54, y + 14, 290, y + 200), PROSE, fontname="tiro", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_bare_columns_of_figures_over_a_caption_become_a_table(tmp_path: Path) -> None:
    page = parse_file(_page(tmp_path / "paper.pdf", ROWS)).pages[0]
    assert len(page.tables) == 1
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| Method | QQP | MSRPC | ACL |" in table
    assert "| NC-RAPT (High) | 42.72 | 39.50 | 41.30 |" in table
    assert "| LoRA | 37.89 | 33.62 | 33.22 |" in table
    assert "Table 4: SARI of each method." in table  # the caption under the grid goes with it
    assert "right column" not in table  # the other column of the page stays out
    running = page.text[:page.tables[0].start] + page.text[page.tables[0].end:]
    assert "42.72" not in running and "ground truth paraphrase" in running and "right column" in running


def test_a_caption_over_its_table_works_too(tmp_path: Path) -> None:
    page = parse_file(_page(tmp_path / "over.pdf", ROWS, caption_below=False)).pages[0]
    assert len(page.tables) == 1
    assert "| Fine Tuning | 38.02 | 34.49 | 33.66 |" in page.text[page.tables[0].start:page.tables[0].end]


def test_without_a_caption_or_without_figures_the_lines_stay_text(tmp_path: Path) -> None:
    uncaptioned = parse_file(_page(tmp_path / "plain.pdf", ROWS, caption="Results of each method.")).pages[0]
    assert uncaptioned.tables == [] and "42.72" in uncaptioned.text
    examples = [("Input", "why do all of my questions get marked"), ("LPT", "why do my questions get marked"),
                ("RAPT", "why are my questions still being marked"), ("NC-RAPT", "why is my question marked")]
    words_only = parse_file(_page(tmp_path / "examples.pdf", examples)).pages[0]
    assert words_only.tables == [] and "still being marked" in words_only.text


def test_prose_that_starts_with_table_is_no_caption(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(54, 60, 290, 400), "Table 2 shows that our model is best on 42.5 of the "
                        "tasks and 37.1 of the rest. " + PROSE * 2, fontname="tiro", fontsize=9)
    doc.save(tmp_path / "prose.pdf")
    doc.close()
    parsed = parse_file(tmp_path / "prose.pdf").pages[0]
    assert parsed.tables == [] and "42.5" in parsed.text


def test_a_heading_spanning_columns_does_not_merge_them(tmp_path: Path) -> None:
    spanning = [ROWS[0], ("Setting", "Dataset: paraphrase corpora", None, None), *ROWS[1:]]  # wider than a column
    page = parse_file(_page(tmp_path / "spanning.pdf", spanning)).pages[0]
    assert len(page.tables) == 1
    assert "| Fine Tuning | 38.02 | 34.49 | 33.66 |" in page.text[page.tables[0].start:page.tables[0].end]

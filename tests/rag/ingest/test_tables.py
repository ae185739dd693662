"""Tables as tables: Markdown blocks with caption and header, own chunks, row-level highlights."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from rag.answer.citations import best_quote
from rag.answer.highlight import locate_passage
from rag.config import ChunkingConfig, RagConfig
from rag.ingest import pdf_pages
from rag.ingest.chunking import chunk_document
from rag.ingest.ingestor import Ingestor
from rag.ingest.options import ParseOptions
from rag.ingest.parse import parse_file
from rag.ingest.pdf_layout import RawWord
from rag.ingest.table_grid import clean_rows, split_header
from rag.ingest.table_stacks import split_stacked_columns, split_stacked_rows, unstack
from rag.ingest.tables import TableBlock
from rag.index.store import DocumentStore
from rag.text.language import count_tokens
from rag.text.table_captions import is_caption_label
from tests import fixtures

ZH_ROWS = [("儿童6至11岁", "100", "3"), ("成人18至64岁", "400", "3")]


def _markdown_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |"


def test_a_ruled_table_becomes_one_markdown_block_with_caption_and_header(tmp_path: Path) -> None:
    page = parse_file(fixtures.make_table_pdf(tmp_path)).pages[0]
    [span] = page.tables
    block = page.text[span.start:span.end]
    expected = "\n".join([fixtures.TABLE_CAPTION, _markdown_row(fixtures.TABLE_HEADER), "| --- | --- | --- |",
                          *(_markdown_row(row) for row in fixtures.TABLE_ROWS)])
    assert block == expected
    assert (span.caption, span.rows, span.part, span.parts) == (fixtures.TABLE_CAPTION, 4, 1, 1)
    # the running text keeps the paragraphs around the table and never repeats a cell
    outside = page.text[:span.start] + page.text[span.end:]
    assert fixtures.TABLE_INTRO in outside and fixtures.TABLE_OUTRO in outside
    assert "Adolescents" not in outside and page.text.count("Adolescents 12-17 years") == 1
    assert all(page.text[w.start:w.end] == w.text for w in page.words)


def test_chinese_table_keeps_its_caption_and_cells(tmp_path: Path) -> None:
    path = fixtures.make_table_pdf(tmp_path, "zh.pdf", rows=ZH_ROWS, caption="表1：各年龄组布洛芬推荐剂量",
                                   header=("年龄组", "单次剂量（毫克）", "每日次数"), font="china-s")
    page = parse_file(path).pages[0]
    [span] = page.tables
    assert page.text[span.start:span.end].splitlines() == [
        "表1：各年龄组布洛芬推荐剂量", "| 年龄组 | 单次剂量（毫克） | 每日次数 |", "| --- | --- | --- |",
        "| 儿童6至11岁 | 100 | 3 |", "| 成人18至64岁 | 400 | 3 |"]


def test_a_long_table_is_split_into_parts_that_repeat_caption_and_header(tmp_path: Path) -> None:
    rows = [(f"Patient group number {n}", str(100 + n), str(n % 4 + 1)) for n in range(24)]
    path = fixtures.make_table_pdf(tmp_path, rows=rows)
    document = parse_file(path, options=ParseOptions(table_max_tokens=60))
    assert len(document.pages) == 1
    spans = document.pages[0].tables
    assert len(spans) > 2 and [s.part for s in spans] == list(range(1, len(spans) + 1))
    body_rows = []
    for span in spans:
        lines = document.pages[0].text[span.start:span.end].splitlines()
        assert lines[:3] == [fixtures.TABLE_CAPTION, _markdown_row(fixtures.TABLE_HEADER), "| --- | --- | --- |"]
        assert count_tokens("\n".join(lines)) <= 60 and span.parts == len(spans)
        body_rows += lines[3:]
    assert body_rows == [_markdown_row(row) for row in rows]  # every row exactly once, in order


def test_table_parts_are_chunks_of_their_own_whatever_the_strategy(tmp_path: Path) -> None:
    rows = [(f"Patient group number {n}", str(100 + n), str(n % 4 + 1)) for n in range(12)]
    document = parse_file(fixtures.make_table_pdf(tmp_path, rows=rows), options=ParseOptions(table_max_tokens=80))
    tables = document.table_spans()
    for strategy in ("recursive", "sentence", "section", "parent_child"):
        chunks = chunk_document(document, "doc", ChunkingConfig(strategy=strategy, chunk_size=80, chunk_overlap=10))
        table_chunks = [c for c in chunks if c.kind == "table"]
        assert [(c.char_start, c.char_end) for c in table_chunks] == tables, strategy
        for chunk in chunks:
            assert document.full_text[chunk.char_start:chunk.char_end] == chunk.text
            if chunk.kind == "text":
                assert "| --- |" not in chunk.text and "Patient group" not in chunk.text, strategy


def test_a_question_about_a_cell_finds_the_table_and_highlights_its_row(store: DocumentStore, config: RagConfig,
                                                                       tmp_path: Path) -> None:
    from tests.fakes import make_engine

    path = fixtures.make_table_pdf(tmp_path)
    result = Ingestor(store, config).ingest_path(path)
    assert result.ok and result.tables == 1
    hits = make_engine(store, config).search("single dose for adolescents 12-17 years").nodes
    top = hits[0].node
    assert top.metadata["kind"] == "table"
    quote = best_quote("Adolescents aged 12-17 years take a single dose of 200 mg [1].", top.get_content())
    assert quote == _markdown_row(fixtures.TABLE_ROWS[1])
    [(page, rects)] = locate_passage(store, top.node_id, quote)
    import pymupdf

    with pymupdf.open(path) as pdf:
        label = pdf[0].search_for("Adolescents 12-17 years")[0]
        value = pdf[0].search_for("200")[0]
    assert page == 1 and len(rects) == 1
    x0, y0, x1, y1 = rects[0]
    assert abs(y0 - label.y0) < 2 and abs(y1 - label.y1) < 2  # exactly that row's line
    assert x0 <= label.x0 + 1 and x1 >= value.x1 - 1  # from the label to the last cell


def test_a_page_whose_table_extraction_fails_keeps_its_text_and_says_why(tmp_path: Path, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise ValueError("odd drawing")

    monkeypatch.setattr(pdf_pages, "find_tables", broken)
    document = parse_file(fixtures.make_table_pdf(tmp_path))
    page = document.pages[0]
    assert not page.tables and "Adolescents 12-17 years" in page.text  # plain text, nothing lost
    assert document.notes == ["page 1: table extraction failed (ValueError: odd drawing); "
                              "its tables are kept as plain text"]


def test_tables_can_be_turned_off(tmp_path: Path) -> None:
    document = parse_file(fixtures.make_table_pdf(tmp_path), options=ParseOptions(tables=False))
    assert not document.table_spans() and "| --- |" not in document.full_text
    assert "Adolescents 12-17 years" in document.full_text


def _word(text: str, x0: float, y0: float) -> RawWord:
    return RawWord(text, (x0, y0, x0 + 8 * len(text), y0 + 10))


def test_currency_signs_join_their_numbers_and_split_columns_merge() -> None:
    # a filing's grid: "$" in its own column on some rows; other rows put the number in that column
    grid = [[(0, 0, 100, 20), (100, 0, 120, 20), (120, 0, 180, 20)],
            [(0, 20, 100, 40), (100, 20, 120, 40), (120, 20, 180, 40)]]
    cells = [[[_word("Cash", 2, 5)], [_word("$", 102, 5)], [_word("4,295", 122, 5)]],
             [[_word("Goodwill", 2, 25)], [_word("8,420", 102, 25)], []]]
    rows = clean_rows(grid, cells)
    assert [[" ".join(w.text for w in cell) for cell in row] for row in rows] == [["Cash", "$ 4,295"],
                                                                                 ["Goodwill", "8,420"]]


def test_a_phrase_cut_by_a_gap_column_edge_is_joined_but_a_drawn_edge_is_kept() -> None:
    # "Trainable" and "rewriter" 2 units apart (a word space of a 10-unit line) on either side of a column edge
    grid = [[(0, 0, 100, 20), (100, 0, 160, 20), (160, 0, 220, 20)],
            [(0, 20, 100, 40), (100, 20, 160, 40), (160, 20, 220, 40)]]
    cells = [[[RawWord("Trainable", (20, 5, 98, 15))], [RawWord("rewriter", (100, 5, 150, 15))], []],
             [[_word("w/ BM25", 2, 25)], [_word("47.80", 102, 25)], [_word("82.2", 162, 25)]]]

    def texts(rows: list) -> list[list[str]]:
        return [[" ".join(w.text for w in cell) for cell in row] for row in rows]

    assert texts(clean_rows(grid, cells, drawn_columns=False))[0] == ["Trainable rewriter", "", ""]
    assert texts(clean_rows(grid, cells, drawn_columns=True))[0] == ["Trainable", "rewriter", ""]
    figures = [[[RawWord("47.80", (70, 5, 98, 15))], [RawWord("60.71", (100, 5, 128, 15))], []]]
    assert texts(clean_rows(grid[:1], figures, drawn_columns=False))[0][:2] == ["47.80", "60.71"]


def _texts_of(rows: list) -> list[list[str]]:
    return [[" ".join(w.text for w in cell) for cell in row] for row in rows]


def test_rows_stacked_in_one_drawn_row_are_split_at_their_labels() -> None:
    # a journal table ruled only under its header: one tall drawn row holds three labels, each with its
    # estimate on the label's line and the standard error on the line below
    grid = [[(0, 0, 100, 60), (100, 0, 200, 60)]]
    labels = [RawWord("hosp", (2, 2, 30, 12)), RawWord("numchron", (2, 22, 50, 32)), RawWord("school", (2, 42, 40, 52))]
    cells = [[labels,
              [RawWord("0.165", (110, 2, 140, 12)), RawWord("(0.006)", (110, 12, 150, 22)),
               RawWord("0.147", (110, 22, 140, 32)), RawWord("(0.005)", (110, 32, 150, 42)),
               RawWord("0.026", (110, 42, 140, 52))]]]
    grid, cells = split_stacked_rows(grid, cells)
    assert _texts_of(clean_rows(grid, cells)) == [["hosp", "0.165 (0.006)"], ["numchron", "0.147 (0.005)"],
                                                  ["school", "0.026"]]


def test_values_of_several_models_in_one_drawn_column_are_split_at_their_gaps() -> None:
    # pscl's Table 2: one drawn column holds two models' estimates side by side, a heading ("GLM") over both
    grid = [[(0, 0, 100, 12), (100, 0, 220, 12)], [(0, 12, 100, 40), (100, 12, 220, 40)]]
    cells = [[[], [RawWord("GLM", (120, 2, 145, 10))]],
             [[RawWord("hosp", (2, 14, 30, 24)), RawWord("school", (2, 28, 40, 38))],
              [RawWord("0.165", (110, 14, 140, 24)), RawWord("0.218", (170, 14, 200, 24)),
               RawWord("0.026", (110, 28, 140, 38)), RawWord("0.027", (170, 28, 200, 38))]]]
    grid, cells = split_stacked_columns(*split_stacked_rows(grid, cells))
    assert _texts_of(clean_rows(grid, cells)) == [["", "GLM", ""], ["hosp", "0.165", "0.218"],
                                                  ["school", "0.026", "0.027"]]


def test_a_wrapped_label_or_paragraph_in_a_drawn_row_is_not_split() -> None:
    grid = [[(0, 0, 60, 30), (60, 0, 120, 30), (120, 0, 180, 30), (180, 0, 240, 30)]]
    # "自动化改造 / 工程" wrapped in a narrow column beside one-line values and one wrapped figure
    wrapped_label = [[[RawWord("自动化改造", (2, 2, 58, 12)), RawWord("工程", (2, 14, 24, 24))],
                      [RawWord("1,800", (62, 2, 90, 12))], [RawWord("1,59", (122, 2, 150, 12)),
                                                            RawWord("4.52", (122, 14, 150, 24))],
                      [RawWord("否", (182, 2, 192, 12))]]]
    assert split_stacked_rows(grid, wrapped_label)[1] == wrapped_label
    # two paragraphs side by side (an audit matter and its response), every line but the last filled
    paragraph = [[[RawWord("华锦股份存货期末账面", (2, 2, 58, 12)), RawWord("余额重大，管理层确定", (2, 14, 58, 24)),
                   RawWord("可变现净值。", (2, 26, 30, 36))],
                  [RawWord("我们实施的审计程序", (62, 2, 118, 12)), RawWord("主要包括：了解存货", (62, 14, 118, 24)),
                   RawWord("跌价相关内部控制。", (62, 26, 110, 36))], [], []]]
    assert split_stacked_rows(grid, paragraph)[1] == paragraph


def test_one_drawn_row_of_a_table_ruled_between_columns_only_is_split_at_its_blank_lines() -> None:
    # plain TeX's ruled table (cnbook's mushrooms): rules between the columns, none between rows, which are set
    # apart by half a line (6 points) where the lines of one cell are 2 points apart; a label wraps over two lines
    grid = [[(0, 0, 80, 100), (80, 0, 140, 100), (140, 0, 300, 100)]]
    cells = [[[RawWord("Name", (2, 2, 40, 12)), RawWord("Pleurotus", (2, 20, 60, 30)),
               RawWord("ostreatus", (2, 32, 60, 42)), RawWord("Morchella", (2, 50, 60, 60)),
               RawWord("esculenta", (2, 62, 60, 72))],
              [RawWord("Common", (82, 2, 130, 12)), RawWord("Oyster", (82, 20, 120, 30)),
               RawWord("Morel", (82, 50, 120, 60))],
              [RawWord("Features", (142, 2, 200, 12)), RawWord("Shelflike clusters", (142, 20, 290, 30)),
               RawWord("on stumps.", (142, 32, 220, 42)), RawWord("Conical cap,", (142, 50, 290, 60)),
               RawWord("black pits", (142, 62, 230, 72)), RawWord("and no gills.", (142, 74, 240, 84))]]]
    grid, cells = unstack(grid, cells)
    assert _texts_of(clean_rows(grid, cells)) == [
        ["Name", "Common", "Features"], ["Pleurotus ostreatus", "Oyster", "Shelflike clusters on stumps."],
        ["Morchella esculenta", "Morel", "Conical cap, black pits and no gills."]]
    # one line of cells (a shaded band of a striped table) stays one row
    band = [[[RawWord("dvips", (2, 2, 40, 12))], [RawWord("v3.0k", (82, 2, 120, 12))],
             [RawWord("d", (142, 2, 150, 12))]]]
    assert unstack([[(0, 0, 80, 14), (80, 0, 140, 14), (140, 0, 300, 14)]], band)[1] == band


def test_a_percent_sign_in_its_own_cell_joins_its_number() -> None:
    grid = [[(0, 0, 100, 20), (100, 0, 130, 20), (130, 0, 140, 20), (140, 0, 200, 20)]]
    grid.append([(0, 20, 100, 40), (100, 20, 130, 40), (130, 20, 140, 40), (140, 20, 200, 40)])
    cells = [[[_word("Note", 2, 5)], [_word("Rate", 102, 5)], [], [_word("Due", 142, 5)]],
             [[_word("2026", 2, 25)], [_word("8.1", 102, 25)], [_word("%", 131, 25)], [_word("2026", 142, 25)]]]
    rows = clean_rows(grid, cells)
    assert [[" ".join(w.text for w in cell) for cell in row] for row in rows] == [["Note", "Rate", "Due"],
                                                                                 ["2026", "8.1 %", "2026"]]
    assert rows[1][1][1].join == ""  # written as "8.1%" in the Markdown


def test_signs_join_their_numbers_across_empty_spacer_columns() -> None:
    # "Effective tax rate | | 261 | | % | | 4 | | %": the grid has a spacer column between number and sign
    boxes = [(x, 0, x + 20, 20) for x in range(0, 220, 20)]
    words = ["Effective tax rate", "", "261", "", "%", "", "$", "", "4", "", "%"]
    cells = [[[_word(text, box[0] + 1, 5)] if text else [] for text, box in zip(words, boxes)]]
    cells.append([[_word("Tax", 1, 25)], [], [_word("rate", 41, 25)], [], [], [], [], [], [], [], []])
    grid = [boxes, [(x, 20, x + 20, 40) for x in range(0, 220, 20)]]
    rows = clean_rows(grid, cells)
    texts = [[" ".join(w.text for w in cell) for cell in row] for row in rows]
    assert texts[0][:2] == ["Effective tax rate", "261 %"] and "$ 4 %" in texts[0]
    assert "%" not in texts[0] and "$" not in texts[0]


def test_a_number_wrapped_in_a_narrow_cell_is_written_whole() -> None:
    header = [[_word("股东", 0, 0)], [_word("持股数", 60, 0)], [_word("Name", 120, 0)]]
    row = [[_word("朱守琛", 0, 20)], [_word("215,768,64", 60, 20), _word("3", 60, 32)],
           [_word("New", 120, 20), _word("York", 120, 32)]]
    dates = [[_word("Note", 0, 50)], [_word("1,234,5", 60, 50), _word("6", 100, 50)],  # one line: two words
             [_word("May", 120, 50), _word("1,", 150, 50), _word("2026", 120, 62)]]
    codes = [[_word("2019-0", 0, 80), _word("56", 0, 92)], [_word("2019", 60, 80), _word("2018", 60, 92)],
             [_word("2019", 120, 80), _word("/12/2", 120, 92), _word("1", 120, 104)]]
    block = TableBlock(bbox=(0, 0, 200, 120), caption=[], header=header, rows=[row, dates, codes])
    (pieces, _), = block.parts(1000)
    text = "".join(text for text, _ in pieces)
    assert "| 215,768,643 |" in text and "| New York |" in text
    assert "| 1,234,5 6 |" in text and "| May 1, 2026 |" in text
    assert "| 2019-056 | 2019 2018 | 2019/12/21 |" in text  # codes and dates go on; stacked values do not


def test_a_part_that_starts_inside_a_group_repeats_its_heading_rows() -> None:
    def row(y: float, *texts: str) -> list[list[RawWord]]:
        return [[_word(text, 60 * c, y)] if text else [] for c, text in enumerate(texts)]

    header = row(0, "Method", "BLEU", "SARI", "BLEU", "SARI")
    rows = [row(20, "Method", "", "ParaSCI", "", "MSRPC"), row(40, "Baselines", "", "", "", ""),
            *(row(60 + 20 * n, f"Tuning{n}", f"{n}.1", f"{n}.2", f"{n}.3", f"{n}.4") for n in range(6)),
            row(200, "Ours", "", "", "", ""), row(220, "RAPT", "9.1", "9.2", "9.3", "9.4")]
    block = TableBlock(bbox=(0, 0, 300, 240), caption=[], header=header, rows=rows)
    bodies = [("".join(text for text, _ in pieces)).split("| --- |")[-1].strip().split("\n")
              for pieces, _ in block.parts(20)]
    assert len(bodies) == 4
    assert bodies[1][:3] == ["| Method |  | ParaSCI |  | MSRPC |", "| Baselines |  |  |  |  |",
                             "| Tuning2 | 2.1 | 2.2 | 2.3 | 2.4 |"]  # the dataset and the group of its rows
    assert bodies[3] == ["| Method |  | ParaSCI |  | MSRPC |", "| Ours |  |  |  |  |",
                         "| RAPT | 9.1 | 9.2 | 9.3 | 9.4 |"]
    assert sum(body.count("| Tuning3 | 3.1 | 3.2 | 3.3 | 3.4 |") for body in bodies) == 1  # body rows are not repeated


def test_a_row_of_text_wrapped_in_its_cells_is_one_row() -> None:
    # the grid draws every printed line as a row of its own, the cells' edges staggered between columns
    grid = [[(0, 0, 100, 12), (100, 0, 200, 8), (200, 0, 260, 12)],
            [None, (100, 8, 200, 20), None],
            [(0, 12, 100, 24), (100, 20, 200, 24), (200, 12, 260, 24)],
            [(0, 24, 100, 36), (100, 24, 200, 36), (200, 24, 260, 36)]]
    cells = [[[_word("Panjin", 2, 2)], [_word("chemicals", 102, 2)], [_word("86,009,549.69", 202, 4)]],
             [[], [_word("sales", 102, 12)], []],
             [[_word("Jinyang", 2, 14)], [_word("and", 102, 21)], []],
             [[_word("Total", 2, 26)], [_word("--", 102, 26)], [_word("307,418,245.47", 202, 26)]]]
    rows = clean_rows(grid, cells)
    assert [[" ".join(w.text for w in cell) for cell in row] for row in rows] == [
        ["Panjin Jinyang", "chemicals sales and", "86,009,549.69"], ["Total", "--", "307,418,245.47"]]


def test_a_label_wrapped_beside_numbers_at_another_height_is_one_row() -> None:
    # the label's two lines and the numbers are drawn as cells of different heights (three grid rows)
    grid = [[(0, 0, 100, 18), (100, 0, 150, 8)],
            [None, (100, 8, 150, 27)],
            [(0, 18, 100, 36), None]]
    cells = [[[_word("net", 2, 2)], []], [[], [_word("343", 102, 12)]], [[_word("profit", 2, 22)], []]]
    rows = clean_rows(grid, cells)
    assert [[" ".join(w.text for w in cell) for cell in row] for row in rows] == [["net profit", "343"]]


def test_a_label_spanning_rows_of_values_keeps_the_rows_apart() -> None:
    grid = [[(0, 0, 100, 40), (100, 0, 150, 20)], [None, (100, 20, 150, 40)]]
    cells = [[[_word("Mobility", 2, 15)], [_word("100", 102, 5)]], [[], [_word("200", 102, 25)]]]
    rows = clean_rows(grid, cells)
    assert [[" ".join(w.text for w in cell) for cell in row] for row in rows] == [["Mobility", "100"], ["", "200"]]


def test_documents_without_tables_chunk_over_the_whole_text_as_before(tmp_path: Path) -> None:
    from rag.text.splitting import pack, recursive_split, trim

    document = parse_file(fixtures.make_english_pdf(tmp_path))
    text = document.full_text
    assert not document.table_spans()
    chunks = chunk_document(document, "doc", ChunkingConfig(strategy="recursive", chunk_size=60, chunk_overlap=10))
    expected = [trim(text, a, b) for a, b in pack(text, recursive_split(text, 0, len(text), 60), 60, 10)]
    assert [(c.char_start, c.char_end) for c in chunks] == [span for span in expected if span[0] < span[1]]
    assert all(c.kind == "text" for c in chunks)


def _draw_ruled_rows(page: pymupdf.Page, y: float, rows: list[tuple[str, str, str]], *, text_dx: float) -> None:
    """Three-column rows 18 pt high from ``y``, every cell ruled, its text ``text_dx`` right of the cell's edge."""
    for row in rows:
        page.draw_line((72, y), (520, y), width=0.8)
        for x, cell in zip((72, 300, 420), row):
            page.draw_line((x, y), (x, y + 18), width=0.8)
            page.insert_text((x + text_dx, y + 13), cell, fontname="helv", fontsize=9)
        page.draw_line((520, y), (520, y + 18), width=0.8)
        y += 18
        page.draw_line((72, y), (520, y), width=0.8)


def _paragraph_over_table(directory: Path, lines: list[str], *, name: str = "lead.pdf") -> Path:
    """A paragraph (``lines``, one per line, 13 pt apart) whose last line sits right above a ruled table."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    y = 90.0
    for line in lines:
        page.insert_text((72, y), line, fontname="helv", fontsize=9)
        y += 13
    rows = [("", "2021", "2022"), ("Freight revenue", "301", "1,824"), ("Total revenue", "2,903", "6,854")]
    _draw_ruled_rows(page, y - 6, rows, text_dx=4)
    path = directory / name
    doc.save(path)
    return path


PARAGRAPH = ["The following tables present our revenues disaggregated by offering and geographical region. Revenue",
             "by geographical region is based on where the transaction occurred. This level of disaggregation takes",
             "into consideration how the nature, amount, timing, and uncertainty of revenue and cash flows are affected"]


def test_the_last_line_of_a_paragraph_above_a_table_is_no_caption(tmp_path: Path) -> None:
    for tail in ("by economic factors (in millions):", "Report on Form 10-Q."):
        page = parse_file(_paragraph_over_table(tmp_path, [*PARAGRAPH, tail], name=f"{tail[:2]}.pdf")).pages[0]
        [span] = page.tables
        assert span.caption == ""
        assert page.text[span.start:span.end].startswith("|  | 2021 | 2022 |")
        assert tail in page.text[:span.start]  # the paragraph stays whole in the running text


def test_a_title_under_a_finished_paragraph_is_still_the_caption(tmp_path: Path) -> None:
    lines = [*PARAGRAPH[:2], "into consideration how revenue is affected by economic factors:", "Revenue by Offering"]
    page = parse_file(_paragraph_over_table(tmp_path, lines)).pages[0]
    [span] = page.tables
    assert span.caption == "Revenue by Offering"


def _rows(*texts: tuple[str, ...]) -> list[list[list[RawWord]]]:
    return [[[_word(text, 2 + 60 * c, 5 + 20 * r)] if text else [] for c, text in enumerate(row)]
            for r, row in enumerate(texts)]


def _texts(row: list[list[RawWord]]) -> list[str]:
    return ["".join(w.text for w in cell) for cell in row]


def test_a_header_printed_over_several_rows_is_one_header_row() -> None:
    rows = _rows(("", "", "本年比上年", ""), ("", "2019 年", "", "2018 年"), ("", "", "增减", "调整后"),
                 ("营业收入（元）", "39,608", "6.94%", "37,036"), ("", "总计", "", ""), ("总资产（元）", "29,359", "-14.18%", "34,211"))
    header, body = split_header(rows)
    assert _texts(header) == ["", "2019 年", "本年比上年增减", "2018 年调整后"]
    assert [_texts(row)[0] for row in body] == ["营业收入（元）", "", "总资产（元）"]  # the body starts at the first label


def test_heading_rows_named_in_a_stub_column_join_the_header() -> None:
    """A statistics table names its heading rows in the label column ("Method | ML | quasi"): every part of the
    table must repeat them, so they are the header, down to the first row of figures."""
    rows = _rows(("Type", "GLM", "", "zero-augmented"), ("Method", "ML", "quasi", "ML"),
                 ("Object", "fm_pois", "fm_qpois", "fm_zinb"), ("(Intercept)", "1.029", "1.029", "1.194"),
                 ("Note", "fitted", "", ""), ("BIC", "24416.6", "24420.3", "24300.1"))
    header, body = split_header(rows)
    assert _texts(header) == ["TypeMethodObject", "GLMMLfm_pois", "quasifm_qpois", "zero-augmentedMLfm_zinb"]
    assert [_texts(row)[0] for row in body] == ["(Intercept)", "Note", "BIC"]


@pytest.mark.parametrize("texts", [
    (("", "2021", "2022"), ("", "$ 2,903", "$ 6,854"), ("Revenue", "1", "2")),  # figures under the years: a body row
    (("Standard", "(1) material weakness", ""), ("", "(2) a second paragraph of the cell", ""),
     ("Note", "(3) more", "")),  # text in cells: an empty first cell is a wrapped cell
    (("Item", "2019", "2018"), ("", "restated", "restated"), ("Revenue", "1", "2")),  # a complete first row
    (("", "2021", "2022"), ("Revenue", "restated", ""), ("Cost", "1", "2")),  # a label beside one word is a row
    (("", "BLEU", "SARI", "BLEU", "SARI"), ("Method", "QQP", "", "MSRPC", ""), ("Copy", "1", "2", "3", "4")),
], ids=["figures", "text-table", "complete-first-row", "lone-label", "group-heading"])
def test_rows_that_are_no_headings_stay_in_the_body(texts: tuple[tuple[str, ...], ...]) -> None:
    rows = _rows(*texts)
    header, body = split_header(rows)
    assert _texts(header) == list(texts[0]) and len(body) == len(texts) - 1


def test_headings_over_the_ruled_part_with_a_stub_heading_become_the_header_row(tmp_path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Sales and Marketing", fontname="helv", fontsize=9)
    for x, text in ((72, "(In millions, except percentages)"), (320, "2021"), (440, "2022")):
        page.insert_text((x, 106), text, fontname="helv", fontsize=9)
    _draw_ruled_rows(page, 112.0, [("Sales and marketing", "1,103", "1,263"), ("Percentage of revenue", "38 %", "18 %")],
                     text_dx=20)
    doc.save(tmp_path / "stub.pdf")
    parsed = parse_file(tmp_path / "stub.pdf").pages[0]
    [span] = parsed.tables
    lines = parsed.text[span.start:span.end].splitlines()
    assert lines[0] == "Sales and Marketing"
    assert lines[1] == "| (In millions, except percentages) | 2021 | 2022 |"
    assert lines[3] == "| Sales and marketing | 1,103 | 1,263 |" and span.rows == 2  # a body row, not the header


def test_a_caption_led_by_its_label_is_the_caption_even_when_it_reads_like_a_sentence(tmp_path: Path) -> None:
    caption = ["Table 1.2 Revenue by offering for the two years ended December 31, as it was reported in the",
               "annual filing."]
    page = parse_file(_paragraph_over_table(tmp_path, [*PARAGRAPH, *caption])).pages[0]
    [span] = page.tables
    assert span.caption == " ".join(caption)
    assert PARAGRAPH[-1] in page.text[:span.start]  # the paragraph above the label stays running text


@pytest.mark.parametrize("text,label", [("Table 3: Results", True), ("表 1.2 复杂表格示例1。这个引用没有问题。", True),
                                        ("表3.2 列出了部分箭头", False), ("Table 2 shows the results", False),
                                        ("Table 2 (continued)", True), ("续表 2 国内主要大学模板", True),
                                        ("Table A1. Commands for journal names", True), ("Table S2: Prompts", True),
                                        ("Table A shows", False)])
def test_a_sentence_about_a_table_is_no_caption_label(text: str, label: bool) -> None:
    assert is_caption_label(text) is label


def test_a_striped_table_without_rules_is_one_table(tmp_path: Path) -> None:
    """Cells shaded in every other row (colortbl) are no tables of one row each: the rows under the caption are one."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((200, 80), "Table 5: Drivers and color models", fontname="helv", fontsize=9)
    rows = [("Driver", "Version", "rgb"), ("dvips", "2015/12/30 v3.0k", "d"), ("pdftex", "2011/05/27 v0.06d", "d"),
            ("dvipdfm", "1999/9/6 vx.x", "i"), ("xetex", "2016/04/06 v4.08", "d"), ("vtex", "1999/01/14 v6.3", "n")]
    y = 100.0
    page.draw_line((150, y - 2), (450, y - 2), width=0.4)
    for number, row in enumerate(rows):
        for x0, x1 in ((150, 225), (225, 395), (395, 450)) if number % 2 == 0 else ():
            page.draw_rect(pymupdf.Rect(x0, y - 2, x1, y + 10), color=None, fill=(0.88, 0.88, 0.88))
        for x, text in zip((155, 230, 400), row):
            page.insert_text((x, y + 7), text, fontname="helv", fontsize=9)
        y += 12
    page.draw_line((150, y - 2), (450, y - 2), width=0.4)
    doc.save(tmp_path / "striped.pdf")
    doc.close()
    page = parse_file(tmp_path / "striped.pdf").pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end]
    assert span.caption == "Table 5: Drivers and color models"
    assert "| vtex | 1999/01/14 v6.3 | n |" in table and "| dvips | 2015/12/30 v3.0k | d |" in table


"""The outline a table chunk is embedded as: its words without its figures."""

from __future__ import annotations

import pytest

from rag.text.table_text import is_figure, split_markdown_table, table_outline

BALANCE = "\n".join([
    "CONDENSED CONSOLIDATED BALANCE SHEETS",
    "(In millions)",
    "|  | As of December 31, 2021 | As of March 31, 2022 |",
    "| --- | --- | --- |",
    "| Cash and cash equivalents | $ 4,295 | $ 4,184 |",
    "| Goodwill | 8,420 | 8,435 |",
    "| Loss from operations | (1,524) | (482) |",
])


def test_a_markdown_table_splits_into_caption_and_rows_without_the_separator() -> None:
    caption, rows = split_markdown_table(BALANCE)
    assert caption == ["CONDENSED CONSOLIDATED BALANCE SHEETS", "(In millions)"]
    assert rows[0] == ["", "As of December 31, 2021", "As of March 31, 2022"]
    assert rows[2] == ["Goodwill", "8,420", "8,435"] and len(rows) == 4


def test_an_escaped_pipe_stays_inside_its_cell() -> None:
    _, rows = split_markdown_table("| a \\| b | 1 |\n| --- | --- |\n| c | 2 |")
    assert rows == [["a | b", "1"], ["c", "2"]]


@pytest.mark.parametrize("cell, figure", [("$ 4,184", True), ("(482)", True), ("-13.23%", True), ("—", True),
                                          ("", True), ("2022", True), ("Goodwill", False), ("万吨", False),
                                          ("2018 年", False), ("ODB-2", False)])
def test_figures_are_told_from_words(cell: str, figure: bool) -> None:
    assert is_figure(cell) is figure


def test_the_outline_keeps_context_caption_header_and_row_labels_but_drops_figures() -> None:
    outline = table_outline(BALANCE, context="UBER TECHNOLOGIES, INC.")
    assert outline.splitlines() == [
        "UBER TECHNOLOGIES, INC.", "CONDENSED CONSOLIDATED BALANCE SHEETS", "(In millions)",
        "As of December 31, 2021 | As of March 31, 2022",
        "Cash and cash equivalents", "Goodwill", "Loss from operations"]
    assert "8,435" not in outline and "4,295" not in outline


def test_the_header_keeps_its_years_and_rows_keep_every_word_cell() -> None:
    table = "\n".join(["单位：元", "| 行业分类 | 项目 | 2019 年 | 2018 |", "| --- | --- | --- | --- |",
                       "| 化肥行业 | 销售量 | 127.03 | 86.38 |"])
    assert table_outline(table).splitlines() == ["单位：元", "行业分类 | 项目 | 2019 年 | 2018", "化肥行业 | 销售量"]


def test_a_chunk_without_markdown_rows_is_its_own_outline() -> None:
    assert table_outline("Revenue 6,854 2,903", context="Uber") == "Uber\nRevenue 6,854 2,903"

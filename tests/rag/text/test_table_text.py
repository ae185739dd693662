"""The outline a table chunk is embedded as: its words without its figures."""

from __future__ import annotations

import pytest

from rag.text.table_text import is_figure, period_names, split_markdown_table, table_outline, table_period_words

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


OPERATIONS = "\n".join([
    "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS",
    "Three Months Ended March 31,",
    "|  | 2021 | 2022 |",
    "| --- | --- | --- |",
    "| Revenue | $ 2,903 | $ 6,854 |",
])


@pytest.mark.parametrize("caption, header, names", [
    (["Three Months Ended March 31,"], ["", "2021", "2022"], ["first quarter 2021 Q1 2021", "first quarter 2022 Q1 2022"]),
    (["Three Months Ended September 30, 2023"], [""], ["third quarter 2023 Q3 2023"]),
    ([], ["", "Quarter Ended June 30, 2020"], ["second quarter 2020 Q2 2020"]),
    (["Six Months Ended June 30,"], ["", "2022"], ["first half 2022 H1 2022 first six months 2022"]),
    (["Nine Months Ended September 30,"], ["", "2022"], ["first nine months 2022"]),
], ids=["q1-years-in-header", "q3-year-in-caption", "quarter-ended", "first-half", "nine-months"])
def test_a_period_ending_on_a_calendar_quarter_end_gets_the_names_people_ask_with(
        caption: list[str], header: list[str], names: list[str]) -> None:
    assert period_names(caption, header) == names


@pytest.mark.parametrize("caption, header", [
    (["Three Months Ended December 28,"], ["", "2021", "2022"]),  # a fiscal quarter, not a calendar one
    (["Six Months Ended March 31,"], ["", "2022"]),  # six months to March are no calendar half
    (["(In millions)"], ["", "As of March 31, 2022"]),  # a balance date is no period
    (["Year Ended December 31,"], ["", "2021"]),
], ids=["fiscal-quarter", "odd-half", "balance-date", "year"])
def test_other_periods_get_no_names(caption: list[str], header: list[str]) -> None:
    assert period_names(caption, header) == []


def test_the_outline_and_the_keyword_text_name_the_quarters_after_the_header() -> None:
    lines = table_outline(OPERATIONS).splitlines()
    assert lines[2:4] == ["2021 | 2022", "first quarter 2021 Q1 2021 | first quarter 2022 Q1 2022"]
    assert lines[4] == "Revenue"
    assert table_period_words(OPERATIONS) == "first quarter 2021 Q1 2021 | first quarter 2022 Q1 2022"
    assert table_period_words(BALANCE) == ""

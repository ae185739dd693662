"""What a table is found by besides its cells: the sentence that introduces it, and the rows a question names."""

from __future__ import annotations

import pytest

from rag.text.table_captions import (caption_below, has_labelled_caption, lead_in_before, printout_lead_in,
                                     table_lead_in)
from rag.text.table_text import named_row_label, named_title, row_label_key

REVENUE_INTRO = ("Note 2 – Revenue\n\nThe following tables present our revenues disaggregated by offering and "
                 "geographical region. Revenue by geographical region is based on where the\ntransaction occurred. "
                 "This level of disaggregation takes into consideration how revenue is affected\nby economic "
                 "factors (in millions):\n\n")


def test_the_following_table_sentence_is_the_lead_in_up_to_the_paragraph_end() -> None:
    lead = table_lead_in(REVENUE_INTRO)
    assert lead.startswith("The following tables present our revenues disaggregated by offering")
    assert lead.endswith("by economic factors (in millions):") and "\n" not in lead
    assert "Note 2" not in lead  # only the paragraph right above the table


@pytest.mark.parametrize("before, lead", [
    ("Intro.\n\nComponents of debt were as follows (in millions, except for percentages):\n\n",
     "Components of debt were as follows (in millions, except for percentages):"),
    ("公司主要会计数据如下表所示。\n\n", "公司主要会计数据如下表所示。"),
    ("报告期内，基于应收票据的信用风险特征，将其划分为不同组合：\n", "报告期内，基于应收票据的信用风险特征，将其划分为不同组合："),
    ("First sentence ends here. The schedule is summarized below:\n\n", "The schedule is summarized below:"),
], ids=["as-follows", "zh-following-table", "zh-colon", "colon-takes-the-last-sentence"])
def test_a_paragraph_ending_in_a_colon_or_naming_the_table_leads_into_it(before: str, lead: str) -> None:
    assert table_lead_in(before) == lead


@pytest.mark.parametrize("before", [
    "The committee met in March. Revenue grew by 12% in the year.\n\n",  # running text that ends a sentence
    "其他说明：\n\n",  # a form label, not a subject
    "",
], ids=["sentence", "form-label", "nothing"])
def test_other_paragraphs_lead_into_nothing(before: str) -> None:
    assert table_lead_in(before) == ""


def test_the_parts_of_a_split_table_share_the_lead_in_of_the_first_part() -> None:
    part = "| Revenue | 1 |\n| --- | --- |\n| Freight revenue | 2 |"
    text = REVENUE_INTRO + part + "\n\n" + part + "\n\nWe offer subscription memberships.\n\n" + part
    first = len(REVENUE_INTRO)
    second = first + len(part) + 2
    third = text.rindex(part)
    spans = [(first, first + len(part)), (second, second + len(part)), (third, third + len(part))]
    assert lead_in_before(text, spans, second) == lead_in_before(text, spans, first) != ""
    assert lead_in_before(text, spans, third) == ""  # prose in between: that table has its own (none)



PAPER_GRID = "| Model | PopQA | Bio |\n| --- | --- | --- |\n| Ours 13B | 55.8 | 80.2 |"
CAPTION = ("Table 2: Overall experiment results on six tasks. Bold numbers indicate the best performance among "
           "non-proprietary models.")


def test_a_printout_is_led_in_by_the_prose_above_the_commands_that_printed_it() -> None:
    """A table captioned by its command (``rag.ingest.printout_tables``) takes the last sentences of the paragraph
    above the code, passing over the prompt lines between; a typeset table after the same prose takes none."""
    prose = ("The fitted model is stored in res. For models without moderators, one can also use the leave1out() "
             "function to repeatedly fit the model, leaving out one study at a time.")
    printout = "R> leave1out(res, transf = exp, digits = 3)\n|  | estimate | se |\n| --- | --- | --- |\n| 1 | 0.493 | NA |"
    text = prose + "\n\nR> res <- rma(yi, vi, data = dat)\n+   # no moderators\n\n" + printout
    start = text.index("R> leave1out")
    assert lead_in_before(text, [(start, len(text))], start) == prose
    typeset = prose + "\n\n|  | estimate | se |\n| --- | --- | --- |\n| 1 | 0.493 | NA |"
    assert lead_in_before(typeset, [(len(prose) + 2, len(typeset))], len(prose) + 2) == ""
    long_paragraph = "An opening sentence that is long enough to matter here. " * 8 + "The last sentence."
    assert printout_lead_in(long_paragraph + "\n\n").endswith("The last sentence.")
    assert len(printout_lead_in(long_paragraph + "\n\n")) <= 300


def test_a_papers_caption_paragraph_over_the_grid_is_the_lead_in() -> None:
    lead = table_lead_in("Running text ends here.\n\n" + CAPTION.replace("among ", "among\n") + "\n\n")
    assert lead == CAPTION  # whole, on one line, though it ends in a sentence
    assert table_lead_in(CAPTION + "\n\n", captions=False) == ""
    assert table_lead_in("表 3 各模型在三个数据集上的结果\n\n") == "表 3 各模型在三个数据集上的结果"


def test_a_caption_paragraph_under_the_grid_is_found_past_the_later_parts_of_a_split_table() -> None:
    text = PAPER_GRID + "\n\n" + PAPER_GRID + "\n\n" + CAPTION + "\n\nWe now turn to the analysis."
    second = len(PAPER_GRID) + 2
    spans = [(0, len(PAPER_GRID)), (second, second + len(PAPER_GRID))]
    assert caption_below(text, spans, len(PAPER_GRID)) == CAPTION
    assert caption_below(PAPER_GRID + "\n\nWe now turn to the analysis.", spans[:1], len(PAPER_GRID)) == ""


def test_a_caption_set_over_the_next_table_is_not_the_previous_tables() -> None:
    text = PAPER_GRID + "\n\n" + CAPTION + "\n\n" + PAPER_GRID
    later = text.rindex(PAPER_GRID)
    spans = [(0, len(PAPER_GRID)), (later, later + len(PAPER_GRID))]
    assert caption_below(text, spans, len(PAPER_GRID)) == ""
    assert lead_in_before(text, spans, later) == CAPTION


def test_a_table_with_a_labelled_caption_of_its_own_borrows_none() -> None:
    assert has_labelled_caption("Table 3: Dataset split sizes\n" + PAPER_GRID, 0)
    assert not has_labelled_caption("Three Months Ended March 31,\n" + PAPER_GRID + "\nTable 4: later", 0)

STATEMENT = "\n".join([
    "合并利润表", "| 项目 | 2019 年度 | 2018 年度 |", "| --- | --- | --- |",
    "| 一、营业总收入 | 39,608,340,979.04 | 37,036,329,015.10 |",
    "| 其中：营业收入 | 39,608,340,979.04 | 37,036,329,015.10 |",
    "| 投资活动产生的现金流量净额 | -311,436,381.79 | 853,383,040.06 |",
])
REVENUES = "\n".join([
    "Three Months Ended March 31,", "|  | 2021 | 2022 |", "| --- | --- | --- |",
    "| Mobility revenue (1) | $ 853 | $ 2,518 |", "| Freight revenue | 301 | 1,824 |",
    "| Freight | 301 | 1,824 |", "| Balance as of March 31, 2022 | 5 | 6 |", "| Total | 2,903 | 6,854 |",
])


@pytest.mark.parametrize("cell, key", [
    ("其中：营业收入", "营业收入"), ("营业收入（元）", "营业收入"), ("一、营业总收入", "营业总收入"),
    ("Delivery revenue (1)", "delivery revenue"), ("Less: Revenue:", "revenue"), ("营业收入 （元）", "营业收入"),
    ("Unrealized (gain) loss on debt", "unrealized (gain) loss on debt"),
], ids=["zh-of-which", "zh-unit", "zh-numbering", "note-mark", "less-colon", "spaced-unit", "inner-brackets"])
def test_a_row_label_loses_its_numbering_note_mark_and_unit(cell: str, key: str) -> None:
    assert row_label_key(cell) == key


@pytest.mark.parametrize("question, table, label", [
    ("What was Freight revenue in the three months ended March 31, 2022?", REVENUES, "freight revenue"),
    ("How much did freight revenues grow in 2022?", REVENUES, "freight revenue"),
    ("华锦股份2019年营业收入是多少元？", STATEMENT, "营业收入"),
    ("2019年投资活动产生的现金流量净额是多少？", STATEMENT, "投资活动产生的现金流量净额"),
    ("What was the balance as of March 31, 2022?", REVENUES, ""),  # a date row says when, not what
    ("What was the total?", REVENUES, ""),  # "total" is too short to name a particular row
    ("2019年合计是多少？", STATEMENT.replace("一、营业总收入", "合计"), ""),
    ("How is freightliner doing?", REVENUES, ""),  # whole words only
    ("What was Freight revenue?", "Freight revenue 301 1,824", ""),  # no Markdown rows
    ("What output does \\jcap produce?", "| Command | Output |\n| --- | --- |\n| \\jcap | JCAP |", "\\jcap"),
    ("What output does cap produce?", "| Command | Output |\n| --- | --- |\n| cap | CAP |", ""),
], ids=["longest", "plural", "zh-of-which", "zh-long", "date-row", "short", "zh-short", "part-of-a-word", "no-rows",
       "short-code", "short-word"])
def test_the_longest_row_label_a_question_names_word_for_word(question: str, table: str, label: str) -> None:
    assert named_row_label(question, table) == label


def test_an_english_question_names_a_column_too_or_it_asks_about_the_row_not_a_cell() -> None:
    methods = "\n".join(["| Method | SARI | iBLEU |", "| --- | --- | --- |", "| Fine Tuning | 38.02 | 5.64 |",
                         "| NC-RAPT (High) | 42.72 | 15.05 |"])
    assert named_row_label("What SARI score does NC-RAPT get?", methods) == "nc-rapt"
    assert named_row_label("How is novelty controlled in NC-RAPT?", methods) == ""  # the method, not a cell
    assert named_row_label("What was Freight revenue?", REVENUES) == ""  # no period named: any year's table
    assert named_row_label("NC-RAPT的SARI是多少？", methods) == "nc-rapt"  # Chinese questions keep the old rule
    notes = "| | Maturity | Principal |\n| --- | --- | --- |\n| 2029 Senior Note | August 15, 2029 | 1,500 |"
    assert named_row_label("When does the 2029 Senior Note mature?", notes) == "2029 senior note"  # "Maturity"


def test_a_parent_company_statement_counts_only_when_the_question_asks_for_it() -> None:
    parent = STATEMENT.replace("合并利润表", "4、母公司利润表")
    assert named_row_label("2019年营业收入是多少元？", parent) == ""
    assert named_row_label("母公司2019年营业收入是多少元？", parent) == "营业收入"
    assert named_row_label("What was revenue?", "PARENT COMPANY ONLY\n| | 2022 |\n| --- | --- |\n| Revenue | 1 |") == ""


def test_a_short_caption_the_question_names_is_the_tables_title() -> None:
    note = "37、销售费用\n单位： 元\n| 项目 | 本期发生额 |\n| --- | --- |\n| 产品储运费 | 219,557,095.08 |"
    assert named_title("华锦股份2019年销售费用里，产品仓储和运输花了多少钱？", note) == "销售费用"
    assert named_title("华锦股份2019年管理费用是多少？", note) == ""
    parent = note.replace("37、销售费用", "母公司销售费用")
    assert named_title("销售费用是多少？", parent) == ""  # the parent company's, not asked for
    assert named_title("母公司销售费用是多少？", parent) == "母公司销售费用"
    continued = "| 三、投资活动产生的现金流量 |  |\n| --- | --- |\n| 汇率变动对现金及现金等价物的影响 | 4,456,408.40 |"
    assert named_title("2018年度合并现金流量表中，外币汇率波动的影响是多少？", continued) == ""
    assert named_title("2018年度合并现金流量表中，外币汇率波动的影响是多少？", continued,
                       "建新股份2019年年度报告\n5、合并现金流量表\n| 项目 | 2019 年度 |") == "合并现金流量表"
    # the document's title, the context's first line, names every table of the document alike
    assert named_title("建新股份年报中汇率变动的影响是多少？", continued, "建新股份年报\n| 项目 | 2019 年度 |") == ""
    sentence = "Table 2: Possible values of argument methodResidCov\n| a | b |\n| --- | --- |\n| x | 1 |"
    assert named_title("What are the possible values of argument methodResidCov?", sentence) == ""  # a sentence
    assert named_title("What was revenue by region in 2022?", "Revenue\n| | 2022 |\n| --- | --- |\n| Asia | 1 |") == ""


def test_a_question_and_a_table_in_different_chinese_scripts_name_the_same_row_and_title() -> None:
    types = "文献类型和标识代码\n| 文献类型 | 标识代码 |\n| --- | --- |\n| 学位论文 | D |\n| 会议录 | C |"
    assert named_row_label("手冊的文獻類型表中，學位論文的標識代碼是什麼？", types) == "学位论文"
    traditional_table = types.replace("学位论文", "學位論文")
    assert named_row_label("手册的文献类型表中，学位论文的标识代码是什么？", traditional_table) == "學位論文"
    assert named_title("文獻類型和標識代碼表中，會議錄用什麼代碼？", types) == "文献类型和标识代码"

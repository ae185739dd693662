"""A table continued from the page before is searched by that table's caption and header, and a printout at the top of a
page by the command that ended the page before (search context only)."""

from __future__ import annotations

from collections.abc import Sequence

from rag.config import ChunkingConfig
from rag.documents import Page, ParsedDocument, TableSpan
from rag.ingest.chunking import chunk_document
from rag.ingest.table_continuation import continued_contexts, running_lines
from rag.text.table_text import named_row_label

RUNNING = "河北建新化工股份有限公司2019 年年度报告全文"
HEADER = "| 项目 | 2019 年度 | 2018 年度 |\n| --- | --- | --- |\n"


def _page(number: int, blocks: list[str], *, prose_before: str = "") -> Page:
    """A page: the running header, optional prose, the table blocks, then the page number."""
    text = RUNNING + "\n" + (prose_before + "\n" if prose_before else "")
    tables = []
    for block in blocks:
        start = len(text)
        text += block
        tables.append(TableSpan(start=start, end=len(text)))
        text += "\n"
    text += f"{number}\n"
    return Page(number=number, text=text, tables=tables)


def _document(*pages: Page) -> ParsedDocument:
    filler = [_page(n, [], prose_before=f"第{n}页的正文。") for n in range(10, 14)]  # running lines need pages
    return ParsedDocument(file_name="jianxin.pdf", file_type="pdf", pages=[*pages, *filler], title="建新股份年报")


STATEMENT = "4、母公司利润表\n单位：元\n" + HEADER + "| 一、营业收入 | 646,150,128.91 | 808,931,453.53 |"
SECOND = ("| 营业外支出 | 1,093,525.10 | 2,046,351.17 |\n| --- | --- | --- |\n"
          "| 所得税费用 | 5,120,459.61 | 9,569,118.30 |")
THIRD = "| 净利润 | 96,371,337.74 | 117,514,100.00 |\n| --- | --- | --- |\n| 基本每股收益 | 0.18 | 0.22 |"


def test_a_statement_continued_over_pages_carries_its_title_and_header_on_every_page() -> None:
    doc = _document(_page(1, [STATEMENT]), _page(2, [SECOND]), _page(3, [THIRD]))
    offsets = doc.page_offsets()

    inherited = continued_contexts(doc)

    title = "4、母公司利润表\n项目 | 2019 年度 | 2018 年度"
    assert RUNNING.replace(" ", "").replace("2019", "#") in running_lines(doc)  # the running header, digits aside
    assert inherited[offsets[1] + doc.pages[1].tables[0].start].endswith("项目 | 2019 年度 | 2018 年度")
    assert "母公司利润表" in inherited[offsets[1] + doc.pages[1].tables[0].start]
    assert inherited[offsets[2] + doc.pages[2].tables[0].start] == inherited[offsets[1] + doc.pages[1].tables[0].start]
    assert offsets[0] + doc.pages[0].tables[0].start not in inherited  # the first page's table has its own title
    assert title.split("\n")[0] in inherited[offsets[2] + doc.pages[2].tables[0].start]


def test_a_table_with_its_own_title_prose_above_or_other_columns_does_not_continue() -> None:
    titled = "5、现金流量表\n" + HEADER + "| 销售商品收到的现金 | 1 | 2 |"
    four_columns = ("| 股东 | 性质 | 比例 | 股数 |\n| --- | --- | --- | --- |\n"
                    "| 朱守琛 | 境内自然人 | 39.26% | 215,768,643 |")
    doc = _document(_page(1, [STATEMENT]), _page(2, [titled]), _page(3, [four_columns]),
                    _page(4, [SECOND], prose_before="其他说明：本期无重大变化，以下为补充资料。"))
    assert continued_contexts(doc) == {}


def test_chunks_of_a_continued_table_are_searched_by_the_title_but_show_their_own_text() -> None:
    doc = _document(_page(1, [STATEMENT]), _page(2, [SECOND]))
    chunks = chunk_document(doc, "d", ChunkingConfig())
    [continued] = [c for c in chunks if c.kind == "table" and c.page_start == 2]

    assert "母公司利润表" in continued.context and continued.context.startswith("建新股份年报")
    assert "母公司" not in continued.text and continued.text.startswith("| 营业外支出")


def test_a_parent_statement_continued_without_its_title_is_not_taken_for_the_groups() -> None:
    """The named-row boost leaves a parent company's statement to questions that ask for it, page two included."""
    context = "建新股份年报\n4、母公司利润表\n项目 | 2019 年度 | 2018 年度"
    assert named_row_label("建新股份2019年所得税费用是多少元？", SECOND, context) == ""
    assert named_row_label("建新股份母公司2019年所得税费用是多少元？", SECOND, context) == "所得税费用"
    assert named_row_label("建新股份2019年所得税费用是多少元？", SECOND) == "所得税费用"


def _text_page(number: int, lines: list[str], tables: Sequence[str] = ()) -> Page:
    """A page of ``lines``, then each table, then its number (no running header)."""
    text = "\n".join(lines) + "\n"
    spans = []
    for table in tables:
        spans.append(TableSpan(start=len(text), end=len(text) + len(table)))
        text += table + "\n"
    return Page(number=number, text=text + f"{number}\n", tables=spans)


COEFFICIENTS = "Coefficients:\n|  | coef | se |\n| --- | --- | --- |\n| male | 0.09735 | 0.15521 |"


def test_a_printout_at_the_top_of_a_page_is_searched_by_the_command_that_ended_the_page_before() -> None:
    """Sweave sets a command at a page's foot and its output on the next page; the output's tables carry it."""
    command = ["R> fit.gaus <- haplo.glm(y ~ male + geno.glm, family=gaussian,", "+ x=TRUE)", "R> summary(fit.gaus)"]
    doc = ParsedDocument(file_name="haplostats.pdf", file_type="pdf", title="haplo.stats", pages=[
        _text_page(1, ["The regression of a quantitative trait on the haplotypes.", *command]),
        _text_page(2, ["Call:", "haplo.glm(formula = y ~ male + geno.glm)"], [COEFFICIENTS, COEFFICIENTS]),
        _text_page(3, ["R> summary(fit.inter)", "Call:"], [COEFFICIENTS])])
    offsets = doc.page_offsets()

    inherited = continued_contexts(doc)

    assert [inherited.get(offsets[1] + table.start) for table in doc.pages[1].tables] == ["R> summary(fit.gaus)"] * 2
    assert offsets[2] + doc.pages[2].tables[0].start not in inherited  # its own command is on its page


def test_a_page_that_ends_in_prose_or_long_after_a_command_passes_nothing_on() -> None:
    lines = ["R> summary(fit)", *(f"line {n} of the discussion that follows the printout." for n in range(9))]
    for before in (["The fit is discussed below; nothing is printed."], lines):
        doc = ParsedDocument(file_name="v.pdf", file_type="pdf", title="v", pages=[
            _text_page(1, before), _text_page(2, ["Coefficients:"], [COEFFICIENTS])])
        assert continued_contexts(doc) == {}

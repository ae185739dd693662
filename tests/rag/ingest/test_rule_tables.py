"""Tables drawn with horizontal rules only (booktabs), as papers set their results."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rag.ingest.parse import parse_file

COLUMNS = (72.0, 200.0, 260.0, 320.0)
ROWS = [("Model", "PopQA", "TQA", "Bio"),
        ("Baselines without retrieval", None, None, None),  # a section row spanning the table
        ("Llama2 13B", "14.7", "38.5", "53.4"),
        ("Alpaca 13B", "24.4", "61.3", "50.2"),
        ("Ours 13B", "55.8", "69.3", "80.2")]


def _booktabs(page: pymupdf.Page, y: float, rows: list[tuple[str | None, ...]], *, ruled: bool = True,
              right: float = 360) -> float:
    """Rows 14 pt apart from the baseline ``y``, ruled over, under the first row and under the last (when
    ``ruled``) from x = 70 to ``right``; returns where the next line may start."""
    rules = [y - 12]
    for number, row in enumerate(rows):
        for x, text in zip(COLUMNS, row):
            if text:
                page.insert_text((x, y), text, fontname="tiro", fontsize=9)
        if number == 0:
            rules.append(y + 4)
        y += 14
    rules.append(y - 8)
    if ruled:
        for rule_y in rules:
            page.draw_line((70, rule_y), (right, rule_y), width=0.5)
    return y


def _ruled_page(path: Path, rows: list[tuple[str | None, ...]], *, ruled: bool = True,
                caption: str | None = "Table 2: Results on three tasks.") -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    if caption:
        page.insert_text((72, 90), caption, fontname="tiro", fontsize=9)
    y = _booktabs(page, 120.0, rows, ruled=ruled)
    page.insert_textbox(pymupdf.Rect(72, y + 20, 520, y + 120),
                        "The table compares three models. Our model is best on every task we tried.",
                        fontname="tiro", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_a_table_between_horizontal_rules_becomes_a_markdown_table(tmp_path: Path) -> None:
    page = parse_file(_ruled_page(tmp_path / "paper.pdf", ROWS)).pages[0]
    assert len(page.tables) == 1
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "Table 2: Results on three tasks." in table  # the caption above the top rule
    assert "| Model | PopQA | TQA | Bio |" in table
    assert "| Ours 13B | 55.8 | 69.3 | 80.2 |" in table
    assert "| Llama2 13B | 14.7 | 38.5 | 53.4 |" in table
    running = page.text[:page.tables[0].start] + page.text[page.tables[0].end:]
    assert "55.8" not in running and "compares three models" in running


def test_rules_around_text_are_no_table(tmp_path: Path) -> None:
    text_rows = [("Algorithm 1 Training",), ("Input: a corpus and a model",), ("Update the model on the corpus",),
                 ("Return the model",)]
    page = parse_file(_ruled_page(tmp_path / "algorithm.pdf", text_rows)).pages[0]
    assert page.tables == []
    assert "Update the model on the corpus" in page.text


def test_figures_without_rules_or_caption_stay_text(tmp_path: Path) -> None:
    page = parse_file(_ruled_page(tmp_path / "plain.pdf", ROWS, ruled=False, caption=None)).pages[0]
    assert page.tables == []
    assert "55.8" in page.text


def test_figures_without_rules_under_a_caption_are_a_table(tmp_path: Path) -> None:
    page = parse_file(_ruled_page(tmp_path / "captioned.pdf", ROWS, ruled=False)).pages[0]
    assert len(page.tables) == 1  # rag.ingest.caption_tables; more in test_caption_tables.py
    assert "| Alpaca 13B | 24.4 | 61.3 | 50.2 |" in page.text[page.tables[0].start:page.tables[0].end]


def test_a_chart_between_rules_is_no_table(tmp_path: Path) -> None:
    ticks = [("0", "5", "10", "15"), ("20", "25", "30", "35"), ("Iteration", None, None, None)]
    path = _ruled_page(tmp_path / "chart.pdf", ticks)
    doc = pymupdf.open(path)
    doc[0].draw_polyline([(80, 150), (120, 130), (160, 140), (200, 120), (240, 135), (280, 118)], width=1)
    doc.save(tmp_path / "chart-with-curve.pdf")
    doc.close()
    page = parse_file(tmp_path / "chart-with-curve.pdf").pages[0]
    assert page.tables == []


PROMPT_ROWS = [("Dataset", "Instruction"),
               ("ARC-C", "Given four answer candidates, A, B, C and D, choose the best answer choice. Please answer"),
               (None, "with the capitalized alphabet only."),
               ("Bio", "Tell me a bio about the person.")]


def _ruled_text_table(path: Path, caption: str | None, rows: list[tuple[str | None, ...]] = PROMPT_ROWS,
                      columns: tuple[float, ...] = (72.0, 160.0), *, intro: str | None = None) -> Path:
    """Columns of text between three rules (by default a prompt table, one instruction wrapped over two lines), under
    an ``intro`` line if one is given."""
    doc = pymupdf.open()
    page = doc.new_page()
    if intro:
        page.insert_text((72, 80), intro, fontname="tiro", fontsize=9)
    y = 120.0
    rules = [y - 12]
    for number, row in enumerate(rows):
        for x, text in zip(columns, row):
            if text:
                page.insert_text((x, y), text, fontname="tiro", fontsize=9)
        if number == 0:
            rules.append(y + 4)
        y += 12
    rules.append(y - 6)
    right = max(x + pymupdf.get_text_length(text, fontname="tiro", fontsize=9) + 2  # as wide as its text
                for row in rows for x, text in zip(columns, row) if text)
    for rule_y in rules:
        page.draw_line((70, rule_y), (right, rule_y), width=0.5)
    if caption:
        page.insert_text((72, y + 8), caption, fontname="tiro", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_a_ruled_table_of_text_counts_beside_its_caption_with_wrapped_cells_joined(tmp_path: Path) -> None:
    page = parse_file(_ruled_text_table(tmp_path / "prompts.pdf", "Table 5: Instructions used.")).pages[0]
    assert len(page.tables) == 1
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert ("| ARC-C | Given four answer candidates, A, B, C and D, choose the best answer choice. Please answer "
            "with the capitalized alphabet only. |") in table
    assert "| Bio | Tell me a bio about the person. |" in table


def test_ruled_text_under_a_single_title_without_a_caption_stays_text(tmp_path: Path) -> None:
    titled = [("Instructions for each dataset",), *PROMPT_ROWS[1:]]  # one title over both columns: a prompt box
    for caption in (None, "Table 5 shows the instructions we used."):  # a sentence naming a table is no caption
        page = parse_file(_ruled_text_table(tmp_path / "prompts.pdf", caption, titled)).pages[0]
        assert page.tables == [] and "Tell me a bio" in page.text


def test_a_ruled_table_of_text_headed_over_each_column_is_a_table_without_a_caption(tmp_path: Path) -> None:
    """A manual's uncaptioned booktabs table of commands: a heading over each column, text in every cell."""
    commands = [("Purpose", "Command"), ("Contents", "\\tableofcontents"), ("List of figures", "\\listoffigures"),
                ("List of tables", "\\listoftables")]
    page = parse_file(_ruled_text_table(tmp_path / "commands.pdf", None, commands)).pages[0]
    assert len(page.tables) == 1
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| Purpose | Command |" in table and "| List of figures | \\listoffigures |" in table
    page = parse_file(_ruled_text_table(tmp_path / "prompts.pdf", None)).pages[0]
    assert len(page.tables) == 1 and "| Bio | Tell me a bio about the person. |" in page.text


def test_a_heading_spanning_columns_does_not_merge_them(tmp_path: Path) -> None:
    spanning = [ROWS[0], ("Setting", "Short-form and long-form tasks", None, None), *ROWS[1:]]  # over three columns
    page = parse_file(_ruled_page(tmp_path / "spanning.pdf", spanning)).pages[0]
    assert len(page.tables) == 1
    assert "| Ours 13B | 55.8 | 69.3 | 80.2 |" in page.text[page.tables[0].start:page.tables[0].end]


def test_a_group_heading_cut_by_a_column_edge_stays_one_cell(tmp_path: Path) -> None:
    """Booktabs columns come from gaps in the text; a heading centred over them is one phrase, its word
    space narrower than any gap between columns."""
    rows = [*ROWS[:3], (None, None, None, None), *ROWS[3:]]  # a free line at y 162 for the heading
    doc = pymupdf.open(_ruled_page(tmp_path / "groups.pdf", rows))
    doc[0].insert_text((130, 162), "Trainable rewriter", fontname="tiro", fontsize=9)  # over the label's edge
    doc.save(tmp_path / "grouped.pdf")
    doc.close()
    page = parse_file(tmp_path / "grouped.pdf").pages[0]
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| Trainable rewriter |" in table
    assert "| Llama2 13B | 14.7 | 38.5 | 53.4 |" in table  # columns of figures keep their gaps


def test_a_wrapped_label_in_a_table_of_text_stays_in_its_row(tmp_path: Path) -> None:
    rows = [("Barrier", "Description", "Readers"),
            ("Unfamiliar", "Encountering technical jargon from", "T1-3, 5-8"),
            ("terminology", "medicine and biomedical research", None),  # the label and the description wrap
            ("Dense text", "Facing sections of dense text", "T1-8, 11"),
            ("Other barriers", None, None),  # a section row: capitalised, not a continuation
            ("Relating", "Relating information to their", "T2, 5")]
    path = _ruled_text_table(tmp_path / "barriers.pdf", "Table 1. Barriers readers met.", rows, (72.0, 150.0, 300.0))
    page = parse_file(path).pages[0]
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert ("| Unfamiliar terminology | Encountering technical jargon from medicine and biomedical research "
            "| T1-3, 5-8 |") in table
    assert "| Dense text | Facing sections of dense text | T1-8, 11 |" in table
    assert "| Other barriers |  |  |" in table


def test_a_long_table_of_text_counts_beside_its_caption_or_under_headings(tmp_path: Path) -> None:
    """A page-long list of methods leaves more room between its rules than any table of figures."""
    rows = [("Generic", "Brief description of return value")]
    rows += [(f"method{n}", f"Returns the quantity number {n} of the fitted model.") for n in range(30)]
    page = parse_file(_ruled_text_table(tmp_path / "methods.pdf", "Table 8: List of methods.", rows)).pages[0]
    assert {span.caption for span in page.tables} == {"Table 8: List of methods."}  # in parts of a chunk's size
    table = page.text[page.tables[0].start:page.tables[-1].end]
    assert "| method29 | Returns the quantity number 29 of the fitted model. |" in table
    # without a caption it counts by its heading over each column (``header_rule_tables``) ...
    intro = "The generic functions below work on every fitted model."
    uncaptioned = parse_file(_ruled_text_table(tmp_path / "list.pdf", None, rows, intro=intro)).pages[0]
    assert uncaptioned.tables and {span.caption for span in uncaptioned.tables} == {""}
    assert "| method29 | Returns the quantity number 29 of the fitted model. |" in uncaptioned.text
    # ... or, as the page's first line, a table continued from the page before; not a running head over its rule
    assert len(parse_file(_ruled_text_table(tmp_path / "first.pdf", None, rows)).pages[0].tables) == 4
    head = [("12", "Chapter 2 Getting started")] + rows[1:]
    assert parse_file(_ruled_text_table(tmp_path / "head.pdf", None, head, columns=(72.0, 300.0))).pages[0].tables == []


def test_a_bold_caption_label_below_keeps_the_words_beside_it(tmp_path: Path) -> None:
    path = _ruled_text_table(tmp_path / "functions.pdf", None)
    doc = pymupdf.open(path)
    y = 120.0 + 12 * len(PROMPT_ROWS) + 8
    doc[0].insert_text((72, y), "Table 3:", fontname="tibo", fontsize=9)  # the label in bold, set on its own
    doc[0].insert_text((122, y), "Functions and methods for fitted objects.", fontname="tiro", fontsize=9)
    doc.save(tmp_path / "captioned.pdf")
    doc.close()
    page = parse_file(tmp_path / "captioned.pdf").pages[0]
    assert [span.caption for span in page.tables] == ["Table 3: Functions and methods for fitted objects."]


def test_lower_case_labels_beside_short_values_are_rows_of_their_own(tmp_path: Path) -> None:
    """A label in lower case wraps only when the cells beside it ran out of room: "chapter | first" and
    "section | same" are two rows, not one row of a wrapped label."""
    rows = [("Heading", "Before", "After", "Note"), ("part", "first", "part", "was Part"),
            ("chapter", "first", "chapter", "was Chapter"), ("section", "same", "", ""),
            ("subsection", "same", "", ""), ("paragraph", "same", "", "")]
    page = parse_file(_ruled_page(tmp_path / "manual.pdf", rows, caption="Table 7 Default names")).pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end]
    assert span.caption == "Table 7 Default names"
    assert table.splitlines()[1] == "| Heading | Before | After | Note |"
    assert "| chapter | first | chapter | was Chapter |" in table and "| section | same |  |  |" in table


def test_a_caption_label_set_apart_from_its_title_is_no_header_row(tmp_path: Path) -> None:
    rows = [("Heading", "Value", "Note"), ("part", "12.5", "x"), ("chapter", "14.0", "y"), ("section", "16.5", "z")]
    doc = pymupdf.open(_ruled_page(tmp_path / "table.pdf", rows, caption=None))
    doc[0].insert_text((150, 90), "Table 7", fontname="tiro", fontsize=9)  # label and title fall over two columns
    doc[0].insert_text((205, 90), "Default settings of the name option", fontname="tiro", fontsize=9)
    doc.save(tmp_path / "label.pdf")
    doc.close()
    page = parse_file(tmp_path / "label.pdf").pages[0]
    [span] = page.tables
    assert span.caption == "Table 7 Default settings of the name option"
    assert page.text[span.start:span.end].splitlines()[1] == "| Heading | Value | Note |"


def test_columns_set_two_points_apart_stay_apart(tmp_path: Path) -> None:
    """A packed table of centred cells (a column's widest cell ends two points before where the next column's
    widest, in another row, starts) keeps its columns: no row's cell crosses the gap, however narrow it is."""
    rows = [("University", "Template", "Maintainer", "Stars"),
            ("National Defense University", "nudtpaper", "Liu Benyuan", "2"),
            ("Peking University", "NEU_PHD_Template", "Casper Ti. Vector", "3"),
            ("Nanjing University", "nju-thesis", "Haixing-Hu", "4"),
            ("Shandong", "sduthesis", "henrysting@gmail.com", "3")]
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((150, 80), "Table 2 (continued)", fontname="helv", fontsize=9)
    widths = [[pymupdf.get_text_length(text, fontname="helv", fontsize=9) for text in row] for row in rows]
    widest = [max(column) for column in zip(*widths)]
    lefts = [72.0]
    for width in widest[:-1]:
        lefts.append(lefts[-1] + width + 2)
    y = 110.0
    page.draw_line((70, y - 12), (lefts[-1] + 30, y - 12), width=0.5)
    for number, row in enumerate(rows):
        for column, text in enumerate(row):
            x = lefts[column] + (widest[column] - widths[number][column]) / 2
            page.insert_text((x, y), text, fontname="helv", fontsize=9)
        if number == 0:
            page.draw_line((70, y + 4), (lefts[-1] + 30, y + 4), width=0.5)
        y += 14
    page.draw_line((70, y - 8), (lefts[-1] + 30, y - 8), width=0.5)
    doc.save(tmp_path / "packed.pdf")
    doc.close()
    page = parse_file(tmp_path / "packed.pdf").pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end].splitlines()
    assert span.caption == "Table 2 (continued)"
    assert table[1] == "| University | Template | Maintainer | Stars |"
    assert "| Peking University | NEU_PHD_Template | Casper Ti. Vector | 3 |" in table


def test_code_in_a_typewriter_font_stays_one_cell(tmp_path: Path) -> None:
    """Typewriter words align from row to row and their spaces are wider than a proportional gap between cells,
    yet only half a line high: "vcovCL(m, cluster = id)" is one cell, not five columns."""
    rows = [("CL-0", "vcovCL(m, cluster = id, type = \"HC0\")"), ("CL-1", "vcovCL(m, cluster = id, type = \"HC1\")"),
            ("PL", "vcovPL(m, cluster = id, adjust = FALSE)"), ("PC", "vcovPC(m, cluster = id, order.by = round)")]
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Table 1: Covariance matrices in the simulation.", fontname="tiro", fontsize=9)
    y = 120.0
    page.draw_line((70, y - 12), (400, y - 12), width=0.5)
    page.insert_text((72, y), "Label", fontname="tiro", fontsize=9)
    page.insert_text((140, y), "Variance-covariance matrix", fontname="tiro", fontsize=9)
    page.draw_line((70, y + 4), (400, y + 4), width=0.5)
    for label, code in rows:
        y += 14
        page.insert_text((72, y), label, fontname="tiro", fontsize=9)
        page.insert_text((140, y), code, fontname="cour", fontsize=9)
    page.draw_line((70, y + 6), (400, y + 6), width=0.5)
    doc.save(tmp_path / "code.pdf")
    doc.close()
    page = parse_file(tmp_path / "code.pdf").pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end].splitlines()
    assert table[1] == "| Label | Variance-covariance matrix |"
    assert "| PC | vcovPC(m, cluster = id, order.by = round) |" in table


def test_a_caption_between_two_tables_belongs_to_the_nearer(tmp_path: Path) -> None:
    """"Table 4: …" set tight under the first table's bottom rule (its box reaching over the rule) is that table's
    caption, not a title over the table below; "Table 5: …" under the second is the second's."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = _booktabs(page, 120.0, [("Variable", "Estimate", "p"), ("Age", "-0.37", "0.092"), ("Income", "0.02", "1.000"),
                                ("Region", "0.59", "0.015")])
    page.insert_text((72, y - 1), "Table 4: Parameter estimates of the saturated model.", fontname="tiro", fontsize=9)
    y = _booktabs(page, y + 36, [("Compared levels", "Log odds", "p"), ("University - College", "-0.11", "0.999"),
                                 ("Primary - No school", "0.84", "0.003")], right=380)  # a table of its own
    page.insert_text((72, y + 2), "Table 5: Log odds ratios of consecutive levels.", fontname="tiro", fontsize=9)
    doc.save(tmp_path / "two.pdf")
    doc.close()
    page = parse_file(tmp_path / "two.pdf").pages[0]
    assert [span.caption for span in page.tables] == ["Table 4: Parameter estimates of the saturated model.",
                                                      "Table 5: Log odds ratios of consecutive levels."]


def _labelled_pair(path: Path, labels: tuple[str, str], rows: tuple[list[tuple[str, ...]], list[tuple[str, ...]]], *,
                   label_gap: float, table_gap: float, under: str = "") -> list[tuple[str, str]]:
    """(caption, Markdown) of the tables parsed from a page of two booktabs tables of one width, one under the
    other: the first label over the first table, the second ``label_gap`` under its last row's baseline and the second
    table ``table_gap`` under that; ``under`` is a line set right under the second table's bottom rule."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), labels[0], fontname="tiro", fontsize=9)
    y = _booktabs(page, 120.0, rows[0])
    page.insert_text((72, y + label_gap), labels[1], fontname="tiro", fontsize=9)
    y = _booktabs(page, y + table_gap, rows[1])
    if under:
        page.insert_text((72, y + 4), under, fontname="tiro", fontsize=9)
    doc.save(path)
    doc.close()
    parsed = parse_file(path).pages[0]
    return [(span.caption, parsed.text[span.start:span.end]) for span in parsed.tables]


def test_a_table_with_its_label_above_leaves_the_next_label_to_the_table_below(tmp_path: Path) -> None:
    """siunitx sets "Table 1: …" over Table 1 and "Table 2: …" between the two, a point nearer Table 1's bottom rule
    than Table 2's top rule: Table 1 already has its label, so the second is Table 2's."""
    labels = ("Table 1: Base units.", "Table 2: Derived units with special names.")
    tables = _labelled_pair(tmp_path / "pair.pdf", labels,
                            ([("Unit", "Command", "Symbol"), ("ampere", "\\ampere", "A"), ("kelvin", "\\kelvin", "K")],
                             [("Unit", "Command", "Symbol"), ("katal", "\\katal", "kat"), ("lux", "\\lux", "lx")]),
                            label_gap=2, table_gap=20)
    assert [caption for caption, _ in tables] == list(labels)


def test_two_tables_of_one_width_one_under_the_other_are_two_tables(tmp_path: Path) -> None:
    """fduthesis sets 表6 and 表7 one under the other, both as wide as the text: their six rules share their ends and
    lie closer than a table's rules may, so they made one stack; the caption between them cuts it in two."""
    labels = ("Table 6: Numeric citations.", "Table 7: Author-year citations.")
    tables = _labelled_pair(tmp_path / "stacked.pdf", labels,
                            ([("Citing", "Command", "Style"), ("one work", "\\cite", "superscript"),
                              ("two works", "\\cite", "range")],
                             [("Citing", "Command", "Style"), ("one work", "\\citep", "parenthesis"),
                              ("the year", "\\yearcite", "year only")]),
                            label_gap=24, table_gap=44, under="Both need biber.")
    assert [caption for caption, _ in tables] == list(labels)
    assert "| the year | \\yearcite | year only |" in tables[1][1]
    assert "biber" not in tables[1][1]  # a caption walk alone would take the line under the bottom rule


def test_a_caption_under_its_own_table_does_not_make_a_code_box_below_a_table(tmp_path: Path) -> None:
    """Debian's reference frames its shell examples with a rule over and under each; "Table 1.5" under the table
    between two such boxes belongs to that table, so the boxes under it stay running text."""
    doc = pymupdf.open()
    page = doc.new_page()

    def box(top: float, lines: list[str]) -> float:
        for number, line in enumerate(lines):
            page.insert_text((72, top + 14 + 12 * number), line, fontname="cour", fontsize=8)
        bottom = top + 8 + 12 * len(lines)
        for rule_y in (top, bottom):
            page.draw_line((60, rule_y), (540, rule_y), width=0.5)
        return bottom

    box(80, ["$ ls -l /etc/passwd", "-rw-r--r-- 1 root root      2761 Aug 30 10:38 /etc/passwd"])
    y = _booktabs(page, 150.0, [("Digit", "Meaning", "Value"), ("first", "setuid", "4"), ("second", "read", "4"),
                                ("third", "write", "2")])
    page.insert_text((150, y + 6), "Table 1.5: Numeric modes of chmod.", fontname="tiro", fontsize=9)
    y = box(y + 60, ["$ touch foo bar", "$ chmod 644 bar", "-rw-r--r-- 1 penguin      penguin 0 Oct 16 21:39 bar",
                     "-rw-r--r-- 1 penguin      penguin 0 Oct 16 21:35 foo"])
    box(y + 20, ["(file permissions) =      (requested permissions) & ~(umask value)"])
    doc.save(tmp_path / "boxes.pdf")
    doc.close()
    page = parse_file(tmp_path / "boxes.pdf").pages[0]
    assert [span.caption for span in page.tables] == ["Table 1.5: Numeric modes of chmod."]
    assert "chmod 644 bar" not in page.text[page.tables[0].start:page.tables[0].end]


def _captioned_text_table(path: Path, lines: list[tuple[str, ...]], xs: tuple[float, ...], font: str) -> Path:
    """A ruled table of text under "Table 3: …", one text line per entry of ``lines`` (12 pt apart), a rule under
    the first; the rules end where the widest cell of the last column does, as LaTeX sets them."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Table 3: Settings.", fontname="tiro", fontsize=9)
    y, rules, right = 120.0, [108.0], 0.0
    for number, line in enumerate(lines):
        for x, text in zip(xs, line):
            if text:
                right = max(right, x + pymupdf.get_text_length(text, fontname=font, fontsize=9))
                page.insert_text((x, y), text, fontname=font, fontsize=9)
        if number == 0:
            rules.append(y + 4)
        y += 12
    for rule_y in [*rules, y - 6]:
        page.draw_line((70, rule_y), (right + 2, rule_y), width=0.5)
    doc.save(path)
    doc.close()
    return path


def test_a_chinese_label_broken_mid_word_stays_one_row(tmp_path: Path) -> None:
    """thuthesis' 表3 breaks "专业型研究生学位" after 研究 and the cells beside it too: one row, not two."""
    lines = [("学位类型", "degree-name", "说明"), ("学术型博士", "注明学科门类", "可选"),
             ("专业型研究", "专业学位的名称，例如：教育博士、工", "必须填写，否则编译报"), ("生学位", "程硕士", "错"),
             ("本科生", "-", "-")]
    page = parse_file(_captioned_text_table(tmp_path / "zh.pdf", lines, (72.0, 125.0, 290.0), "china-s")).pages[0]
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| 专业型研究生学位 | 专业学位的名称，例如：教育博士、工程硕士 | 必须填写，否则编译报错 |" in table
    assert "| 本科生 | - | - |" in table  # a short label under a full one is a row of its own


def test_a_wrapped_cell_of_words_and_figures_stays_in_its_row(tmp_path: Path) -> None:
    """numerica's defaults ("{,}\\mskip 12mu plus 6mu" over "minus 9mu(vv)") wrap although they hold figures."""
    lines = [("key", "type", "default"), ("dbg", "int", "0"), ("vvd", "tokens", "{,}\\mskip 12mu plus 6mu"),
             ("", "", "minus 9mu(vv)"), ("log", "num", "10")]
    page = parse_file(_captioned_text_table(tmp_path / "en.pdf", lines, (72.0, 160.0, 340.0), "tiro")).pages[0]
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| vvd | tokens | {,}\\mskip 12mu plus 6mu minus 9mu(vv) |" in table
    assert "| log | num | 10 |" in table


def test_a_lone_cell_whose_first_word_would_not_have_fitted_above_continues_the_row(tmp_path: Path) -> None:
    """lme4's formula table wraps "Intercept varying / according to g1 and g2." short of the column's edge: the
    line under it is a lone cell whose first word would not have fitted after "varying"."""
    lines = [("Formula", "Alternative", "Meaning"), ("(1 | g)", "1 + (1 | g)", "Random intercept"),
             ("x + (x | g)", "1 + x + (1 + x | g)", "Correlated random slope"),
             ("(1 | g1/g2)", "(1 | g1)+(1 | g1:g2)", "Intercept varying"), ("", "", "according to g1 and g2."),
             ("x + (1 | g)", "1 + x + (1 | g)", "Fixed slope")]
    page = parse_file(_captioned_text_table(tmp_path / "lme4.pdf", lines, (72.0, 160.0, 340.0), "tiro")).pages[0]
    table = page.text[page.tables[0].start:page.tables[0].end]
    assert "| Intercept varying according to g1 and g2. |" in table
    assert "| x + (1 \\| g) | 1 + x + (1 \\| g) | Fixed slope |" in table


def test_a_label_set_two_line_heights_under_its_table_is_its_caption(tmp_path: Path) -> None:
    """Debian's reference sets "Table 1.5: …" about 2.2 line heights under every table, past the blank line."""
    doc = pymupdf.open()
    page = doc.new_page()
    y = _booktabs(page, 120.0, ROWS)
    page.insert_text((72, y + 26), "Table 1.5: Results of the three models.", fontname="tiro", fontsize=9)  # 2.15 lines
    page.insert_textbox(pymupdf.Rect(72, y + 46, 520, y + 146), "The table compares three models.", fontname="tiro",
                        fontsize=9)
    doc.save(tmp_path / "below.pdf")
    doc.close()
    assert [span.caption for span in parse_file(tmp_path / "below.pdf").pages[0].tables] == [
        "Table 1.5: Results of the three models."]


def test_cells_set_flush_against_the_next_column_do_not_merge_the_columns(tmp_path: Path) -> None:
    """MNRAS's appendix Table A1: a few cells end two points before the next column ("\\apjlett ApJ"), so every
    gap is bridged by some row; the rows holding all three columns, most of the table, still show the columns."""
    rows = [("Command", "Output", "Journal name"), ("\\aj", "AJ", "The Astronomical Journal"),
            ("\\apj", "ApJ", "The Astrophysical Journal"), ("\\apjl or \\apjlett", "ApJ", "The Astrophysical Letters"),
            ("\\jqsrt", "J. Quant. Spectrosc. Radiat.", "Journal of Quantitative Spectroscopy"),
            ("\\mnras", "MNRAS", "Monthly Notices"), ("\\pasj", "PASJ", "Publications of the Astronomical Society")]
    widest = [max(pymupdf.get_text_length(row[column], fontname="tiro", fontsize=9) for row in rows)
              for column in range(3)]
    lefts = [72.0, 72.0 + widest[0] + 1.8]
    lefts.append(lefts[1] + widest[1] + 1.8)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Table A1. Commands for abbreviated journal names.", fontname="tiro", fontsize=9)
    y = 120.0
    rules = [y - 12]
    for number, row in enumerate(rows):
        for x, text in zip(lefts, row):
            page.insert_text((x, y), text, fontname="tiro", fontsize=9)
        if number == 0:
            rules.append(y + 4)
        y += 14
    for rule_y in [*rules, y - 8]:
        page.draw_line((70, rule_y), (lefts[2] + widest[2] + 2, rule_y), width=0.5)
    doc.save(tmp_path / "journals.pdf")
    doc.close()
    page = parse_file(tmp_path / "journals.pdf").pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end].splitlines()
    assert span.caption == "Table A1. Commands for abbreviated journal names."
    assert table[1] == "| Command | Output | Journal name |"
    assert "| \\pasj | PASJ | Publications of the Astronomical Society |" in table


def _mid_and_bottom_rules(path: Path, caption: str | None, *, intro: str | None = None) -> Path:
    """lua-physical's tables: the header line, a rule under it, rows whose definitions wrap over three lines (too
    few lines of cells for a table of aligned text under its caption), a bottom rule, no rule over the header."""
    rows = [("Quantity", "Unit", "Symbol", "Definition"),
            ("mass", "kilogram", "_kg", "The SI unit of mass. It is", "defined by taking the fixed", "value of h."),
            ("current", "ampere", "_A", "The SI unit of electric", "current. It is defined by", "the charge e."),
            ("temperature", "kelvin", "_K", "The SI unit of thermo-", "dynamic temperature. It is", "defined by k."),
            ("information", "bit", "_bit", "The smallest amount of", "information, a single", "binary digit.")]
    doc = pymupdf.open()
    page = doc.new_page()
    if intro:
        page.insert_text((72, 95), intro, fontname="tiro", fontsize=9)
    y = 120.0
    for number, row in enumerate(rows):
        for x, text in zip((72, 160, 230, 290), row[:4]):
            page.insert_text((x, y), text, fontname="tiro", fontsize=9)
        for wrapped in row[4:]:  # the definition's further lines
            y += 11
            page.insert_text((290, y), wrapped, fontname="tiro", fontsize=9)
        if number == 0:
            page.draw_line((70, y + 4), (420, y + 4), width=0.5)
        y += 14
    page.draw_line((70, y - 8), (420, y - 8), width=0.5)
    if caption:
        page.insert_text((200, y + 10), caption, fontname="tiro", fontsize=9)
    doc.save(path)
    doc.close()
    return path


def test_a_table_with_a_mid_and_a_bottom_rule_counts_beside_its_caption_or_under_headings(tmp_path: Path) -> None:
    page = parse_file(_mid_and_bottom_rules(tmp_path / "units.pdf", "Table 3: Base units")).pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end].splitlines()
    assert span.caption == "Table 3: Base units"
    assert table[1] == "| Quantity | Unit | Symbol | Definition |"  # the line over the first rule is the header
    assert "| temperature | kelvin | _K | The SI unit of thermo- dynamic temperature. It is defined by k. |" in table
    # without a caption it counts by its heading over each column, ending at the bottom rule (``header_rule_tables``)
    plain = parse_file(_mid_and_bottom_rules(tmp_path / "plain.pdf", None, intro="4.2 SI base units")).pages[0]
    [span] = plain.tables
    assert "| temperature | kelvin | _K | The SI unit of thermo- dynamic temperature. It is defined by k. |" in (
        plain.text[span.start:span.end])


OPTION_ROWS = [("aboveskip", "sets the skip above caption", "2.6"), ("compatibility", "force (non-)compatibility", "7"),
               ("hypcap", "selects the hypcap feature", "7.6"), ("labelsep", "sets the label separator", "2.1"),
               ("singlelinecheck", "single-line check on or off", "2.2"),
               ("style", "sets the caption style", "2.5")]


def _header_ruled(path: Path, rows: list[tuple[str, ...]], *, header: tuple[str, ...] = ("Option", "Short description",
                  "Section"), after: str = "Obsolete options are not listed here; see the appendix for them.") -> Path:
    """A manual's longtable of options: the header line over a rule, no rule over or under the rows, a raised mark
    after some option names (the caption manual's "†"), prose after a blank line."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "A.1 Options", fontname="tiro", fontsize=12)
    columns = (72.0, 190.0, 400.0)
    for x, text in zip(columns, header):
        page.insert_text((x, 100), text, fontname="tiro", fontsize=10)
    page.draw_line((70, 104), (440, 104), width=0.4)
    y = 116.0
    for number, row in enumerate(rows):
        for x, text in zip(columns, row):
            page.insert_text((x, y), text, fontname="cour", fontsize=10)
        if number % 3 == 1:
            page.insert_text((columns[0] + pymupdf.get_text_length(row[0], fontname="cour", fontsize=10) + 4, y - 3),
                             "*", fontname="tiro", fontsize=7)
        y += 12
    page.insert_textbox(pymupdf.Rect(72, y + 14, 440, y + 60), after, fontname="tiro", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def test_a_table_ruled_under_its_header_only_is_a_table_up_to_the_prose_after_it(tmp_path: Path) -> None:
    page = parse_file(_header_ruled(tmp_path / "options.pdf", OPTION_ROWS)).pages[0]
    [span] = page.tables
    table = page.text[span.start:span.end].splitlines()
    assert table[:2] == ["A.1 Options", "| Option | Short description | Section |"]  # marks joined to the names
    assert "| hypcap | selects the hypcap feature | 7.6 |" in table
    assert "| compatibility * | force (non-)compatibility | 7 |" in table
    running = page.text[:span.start] + page.text[span.end:]
    assert "Obsolete options are not listed here" in running and "7.6" not in running


def test_a_rule_under_a_running_head_or_over_a_short_list_makes_no_table(tmp_path: Path) -> None:
    # a running head is two runs over a rule too, but prose follows it
    running_head = _header_ruled(tmp_path / "head.pdf", [], header=("3 Usage", "", "17"), after=" ".join(
        ["The package is loaded with usepackage and takes the options listed in the next section."] * 4))
    assert parse_file(running_head).pages[0].tables == []
    short = _header_ruled(tmp_path / "short.pdf", OPTION_ROWS[:3])  # three lines could be any list under a rule
    page = parse_file(short).pages[0]
    assert page.tables == [] and "selects the hypcap feature" in page.text

"""Lists of terms set in two columns without any rule (a manual's commands and what they print, debug levels and
what they show) are tables; numbered lists, bullets, margin notes and two columns of running text are not."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from tests.rag.ingest.page_tables import tables_and_running_text


COMMANDS = [("\\dbval", "the value of the current field"),
            ("\\dbtoday", "today's date"),
            ("\\dbDatabase", "name of the database"),
            ("\\dbFilterName", "name of the current filter"),
            ("\\dbIndex", "index of the item, same as dbuse")]
ZH_PROSE = ("读者很少从第一页读到最后一页，他们只查找自己需要的那一个命令，然后回到自己的文字。"
            "像这样的一页正文把每一行都排到右边，每一行都是文字，而不是一个名称和它的意思。") * 4
PROSE = ("Readers of a manual rarely read it from the first page to the last; they look up the one command they need "
         "and go back to their own text. A page of running text like this one fills every line to the right edge, and "
         "its lines hold words, not a name and its meaning. ") * 3


TEXTBOX_PITCH = 14.05  # points between the lines ``insert_textbox`` sets in 10 pt Times


def _page_with(path: Path, draw) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "The package defines some special commands:", fontname="tiro", fontsize=10)
    draw(page)
    page.insert_textbox(pymupdf.Rect(72, 600, 520, 760), "The commands above expand to different text in each "
                        "context.", fontname="tiro", fontsize=10)
    doc.save(path)
    doc.close()
    return path


def _two_columns(rows: list[tuple[str, str]], *, term_x: float = 90, meaning_x: float = 200, top: float = 120,
                 pitch: float = 18, right_aligned: bool = False):
    def draw(page: pymupdf.Page) -> None:
        for number, (term, meaning) in enumerate(rows):
            y = top + number * pitch
            x = term_x - pymupdf.get_text_length(term, fontname="tiro", fontsize=10) if right_aligned else term_x
            page.insert_text((x, y), term, fontname="tiro", fontsize=10)
            page.insert_text((meaning_x, y), meaning, fontname="tiro", fontsize=10)
    return draw


def test_a_list_of_commands_beside_their_meanings_is_one_table(tmp_path: Path) -> None:
    tables, running = tables_and_running_text(_page_with(tmp_path / "commands.pdf", _two_columns(COMMANDS)))
    assert len(tables) == 1
    for term, meaning in COMMANDS:
        assert f"| {term} | {meaning} |" in tables[0]
        assert meaning not in running  # the running text does not repeat a cell
    assert "special commands" in running + tables[0] and "expand to different text" in running


def test_terms_set_flush_right_in_the_margin_are_a_table(tmp_path: Path) -> None:
    styles = [("Simplified", "numbers in simplified Chinese"), ("Traditional", "numbers in traditional Chinese"),
              ("Normal", "numbers in lower case"), ("Financial", "numbers in upper case"),
              ("Ancient", "twenty written as one character")]
    draw = _two_columns(styles, term_x=125, meaning_x=131, pitch=15, right_aligned=True)
    tables, _ = tables_and_running_text(_page_with(tmp_path / "styles.pdf", draw))
    assert len(tables) == 1 and "| Normal | numbers in lower case |" in tables[0]


def test_codes_that_do_not_count_are_terms_but_numbered_items_are_not(tmp_path: Path) -> None:
    levels = [("1", "stat calls (disk lookups)"), ("2", "hash table lookups"), ("4", "file open and close"),
              ("8", "generic path information")]
    tables, _ = tables_and_running_text(_page_with(tmp_path / "levels.pdf", _two_columns(levels, meaning_x=110)))
    assert len(tables) == 1 and "| 4 | file open and close |" in tables[0]
    for markers in (["1.", "2.", "3.", "4."], ["(a)", "(b)", "(c)", "(d)"], ["2.1", "2.2", "2.3", "2.4"]):
        items = [(marker, meaning) for marker, (_, meaning) in zip(markers, levels)]
        tables, running = tables_and_running_text(_page_with(tmp_path / "items.pdf", _two_columns(items, meaning_x=110)))
        assert tables == [], markers
        assert "hash table lookups" in running


def test_bullets_three_rows_and_commented_code_stay_text(tmp_path: Path) -> None:
    bullets = [("-", meaning) for _, meaning in COMMANDS]
    short = COMMANDS[:3]
    code = [(f"\\set{name}{{1}}", f"% sets the {name}") for name in ("width", "height", "depth", "scale")]
    for rows in (bullets, short, code):
        tables, running = tables_and_running_text(_page_with(tmp_path / "text.pdf", _two_columns(rows)))
        assert tables == [], rows[0]
        assert rows[1][1] in running


def test_two_columns_of_running_text_are_no_table(tmp_path: Path) -> None:
    for prose, font, phrase in ((PROSE, "tiro", "rarely read it"), (ZH_PROSE, "china-s", "很少从第一页")):
        def draw(page: pymupdf.Page) -> None:
            page.insert_textbox(pymupdf.Rect(72, 100, 290, 580), prose, fontname=font, fontsize=10, align=3)
            page.insert_textbox(pymupdf.Rect(305, 100, 523, 580), prose, fontname=font, fontsize=10, align=3)
        tables, running = tables_and_running_text(_page_with(tmp_path / "paper.pdf", draw))
        assert tables == [], font
        assert phrase in running.replace("\n", "")


def test_margin_notes_beside_running_text_are_no_table(tmp_path: Path) -> None:
    notes = ["\\makeactive", "\\makeinactive", "New: 2012-12-02", "Updated: 2022-07-10"]

    def draw(page: pymupdf.Page) -> None:
        page.insert_textbox(pymupdf.Rect(131, 110, 520, 400), PROSE, fontname="tiro", fontsize=10, align=3)
        for number, note in enumerate(notes):  # flush right against the text, one beside each of its first lines
            width = pymupdf.get_text_length(note, fontname="tiro", fontsize=10)
            page.insert_text((125 - width, 110 + 9.4 + number * TEXTBOX_PITCH), note, fontname="tiro", fontsize=10)
    tables, running = tables_and_running_text(_page_with(tmp_path / "notes.pdf", draw))
    assert tables == []
    assert "Updated: 2022-07-10" in running and "rarely read it" in running


def test_a_list_beside_margin_notes_is_one_table_and_the_notes_stay_text(tmp_path: Path) -> None:
    def draw(page: pymupdf.Page) -> None:
        _two_columns(COMMANDS, term_x=150, meaning_x=250, pitch=19)(page)
        for number, (term, _) in enumerate(COMMANDS):  # each command's name again in the margin, at its own pitch
            page.insert_text((40, 116 + number * 13.7), term, fontname="tiro", fontsize=9)
            page.insert_text((112, 116 + number * 13.7), "*", fontname="tiro", fontsize=9)
    tables, running = tables_and_running_text(_page_with(tmp_path / "margin.pdf", draw))
    assert len(tables) == 1
    assert all(f"| {term} | {meaning} |" in tables[0] for term, meaning in COMMANDS)
    assert running.count("*") == len(COMMANDS)


def test_an_index_contents_chart_ticks_and_numbered_code_stay_text(tmp_path: Path) -> None:
    index = [("polar, 20", "relpoint, 29"), ("pop, 70", "reltime, 28"), ("Portrait, 47", "remainder, 68"),
             ("position, 13", "rename, 54"), ("postscript, 51", "restore, 51")]
    contents = [("Arguments", ". . . 12"), ("Spaces", ". . . 12"), ("Comments", ". . . 13"),
                ("Punctuation", ". . . 14")]
    code = [(f"{number} \\tl_new:N", f"\\l__pkg_{name}_tl") for number, name in enumerate(("a", "b", "c", "d"), 33)]
    ticks = [("46", "49"), ("45", "48"), ("44 EM", "47 F1"), ("43", "46"), ("42", "45")]  # two charts side by side
    # names in the margin beside numbered code
    named_code = [(f"\\{name}m", f"{number} \\newcommand*{{\\{name}m}}{{\\@intensive\\{symbol}@symbol}}")
                  for number, (name, symbol) in enumerate((("E", "totalenergy"), ("U", "internalenergy"),
                                                           ("F", "Helmholtz"), ("G", "Gibbs")), 849)]
    for rows in (index, contents, ticks, code, named_code):
        tables, running = tables_and_running_text(_page_with(tmp_path / "text.pdf", _two_columns(rows, pitch=12)))
        assert tables == [], rows[0]
        assert rows[1][1] in running


def test_margin_notes_beside_paragraphs_of_ragged_lines_are_no_table(tmp_path: Path) -> None:
    notes = ["\\context", "\\begin{context}", "\\end{context}", "\\textcontext", "\\setcontext"]
    words = PROSE.split()

    def draw(page: pymupdf.Page) -> None:
        y = 120.0
        for number, note in enumerate(notes):  # each note beside the first of four ragged lines of its paragraph
            width = pymupdf.get_text_length(note, fontname="tiro", fontsize=10)
            page.insert_text((125 - width, y), note, fontname="tiro", fontsize=10)
            for line in range(4):
                start = (number * 4 + line) * 7 % (len(words) - 12)
                page.insert_text((131, y), " ".join(words[start:start + 6 + (number + line) % 5]), fontname="tiro",
                                 fontsize=10)
                y += TEXTBOX_PITCH
    tables, running = tables_and_running_text(_page_with(tmp_path / "paragraphs.pdf", draw))
    assert tables == []
    assert "\\textcontext" in running


def test_terms_centred_in_their_column_are_one_table(tmp_path: Path) -> None:
    exhibits = [("3.1", "Amended and Restated Certificate of Incorporation"),
                ("10.2+", "Amendment to the Master Agreement"),
                ("31.1", "Certification of the Principal Executive Officer"), ("101.SCH", "XBRL Taxonomy Schema"),
                ("104", "Cover Page Interactive Data File")]

    def draw(page: pymupdf.Page) -> None:
        for number, (term, meaning) in enumerate(exhibits):
            width = pymupdf.get_text_length(term, fontname="tiro", fontsize=10)
            page.insert_text((60 - width / 2, 120 + number * 12), term, fontname="tiro", fontsize=10)
            page.insert_text((100, 120 + number * 12), meaning, fontname="tiro", fontsize=10)
    tables, _ = tables_and_running_text(_page_with(tmp_path / "exhibits.pdf", draw))
    assert len(tables) == 1
    assert all(f"| {term} | {meaning} |" in tables[0] for term, meaning in exhibits)


def test_a_gap_of_several_lines_ends_a_list(tmp_path: Path) -> None:
    lone = ("\\dbsave", "saves one item")  # one aligned pair, three line heights above the list

    def draw(page: pymupdf.Page) -> None:
        _two_columns([lone], top=100)(page)
        _two_columns(COMMANDS[:4], top=140)(page)
        _two_columns(COMMANDS[1:], top=300)(page)  # a second list of the same columns, well below the first
    tables, running = tables_and_running_text(_page_with(tmp_path / "two-lists.pdf", draw))
    assert len(tables) == 2
    assert "saves one item" in running and "saves one item" not in "".join(tables)


def test_a_list_with_group_names_on_its_left_is_one_table_of_its_terms(tmp_path: Path) -> None:
    # R/qtl's "Selected R/qtl functions": a group's name stands on the first line of each group only
    groups = {"Sample data": [("hyper", "Backcross data on hypertension"), ("listeria", "Intercross data on Listeria")],
              "Simulation": [("sim.cross", "Simulate a QTL experiment"), ("sim.map", "Generate a genetic map")],
              "Summaries": [("plot.cross", "Plot features of a cross"), ("plotPheno", "Histogram of a phenotype")]}

    def draw(page: pymupdf.Page) -> None:
        y = 120
        for group, rows in groups.items():
            page.insert_text((60, y), group, fontname="tiro", fontsize=10)
            for term, meaning in rows:
                page.insert_text((170, y), term, fontname="tiro", fontsize=10)
                page.insert_text((260, y), meaning, fontname="tiro", fontsize=10)
                y += 12

    tables, running = tables_and_running_text(_page_with(tmp_path / "groups.pdf", draw))
    assert len(tables) == 1
    for rows in groups.values():
        for term, meaning in rows:
            assert f"| {term} | {meaning} |" in tables[0]
    assert "Simulation" in running  # the group's name stays text beside the table


def test_numbered_code_and_code_cut_at_a_wide_space_stay_text(tmp_path: Path) -> None:
    # ctex.dtx's listing: code padded to end at one x, its line number set close before it, or apart before a brace
    numbered = [(str(number), "" if number % 2 == 0 else "{", command, f"\\g__pkg_{name}_tl")
                for number, name, command in zip(range(5648, 5653), "abcde",
                                                 ["\\cs_new_protected:Npn", "\\tl_gput_right:Nn"] * 3)]
    calls = [("", "", "plot(out.em,", "chr=c(1,4,15))"), ("", "", "plot(out.hk,", "chr=c(1,4,15),add=TRUE)"),
             ("", "", "plot(out.imp,", "chr=c(1,4,15),add=TRUE)"), ("", "", "plot(out.em,", "chr=c(2,3),col=2)")]
    for rows in (numbered, calls):
        def draw(page: pymupdf.Page, rows=rows) -> None:
            for line, (number, brace, code, rest) in enumerate(rows):
                y = 120 + line * 12
                code_x = 250 - pymupdf.get_text_length(code, fontname="cour", fontsize=9)
                page.insert_text((code_x, y), code, fontname="cour", fontsize=9)
                if brace:
                    page.insert_text((90, y), f"{number} {brace}", fontname="cour", fontsize=9)
                elif number:
                    width = pymupdf.get_text_length(number, fontname="tiro", fontsize=7)
                    page.insert_text((code_x - 2 - width, y), number, fontname="tiro", fontsize=7)
                page.insert_text((262, y), rest, fontname="cour", fontsize=9)

        tables, running = tables_and_running_text(_page_with(tmp_path / "code.pdf", draw))
        assert tables == [], rows[0]
        assert rows[1][3] in running

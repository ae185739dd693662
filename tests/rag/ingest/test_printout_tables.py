"""A program's printed output (R's coefficient tables, matrices, summaries in a typewriter font) is a table captioned
by the command that printed it; code, a typewriter index, and the same layout in proportional type are not."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf

from rag.ingest.pdf_layout import TEXT_FLAGS, read_layout
from rag.ingest.printout_tables import printout_tables
from tests.rag.ingest.page_tables import tables_and_running_text

COEFFICIENTS = [("(Intercept)", "-0.1470652", "0.0963031", "-1.5271", "0.126734"),
                ("Gendermale", "0.0068805", "0.0550486", "0.1250", "0.900531"),
                ("Ethnicwhite", "0.0500281", "0.0592975", "0.8437", "0.398848"),
                ("Treatmenteduc", "-0.2371848", "0.0905877", "-2.6183", "0.008837")]
NAMES = ("Estimate", "Std. Error", "z value", "Pr(>|z|)")
COURIER_PITCH = 6.0  # points: every character of 10 pt Courier
PROSE = ("The refitted model gives standard errors for every coefficient; the printout below lists them in the order "
         "of the formula. ")


def _printed(rows: list[tuple[str, ...]], names: tuple[str, ...], stars: list[str] | None = None) -> list[str]:
    """Lines as R prints a matrix: row names flush left, each column right-aligned under its name."""
    label_width = max(len(row[0]) for row in rows)
    widths = [max(len(name), *(len(row[c + 1]) for row in rows)) for c, name in enumerate(names)]
    header = " " * label_width + "".join(" " + name.rjust(width) for name, width in zip(names, widths))
    lines = [header]
    for number, row in enumerate(rows):
        line = row[0].ljust(label_width) + "".join(" " + value.rjust(width) for value, width in zip(row[1:], widths))
        lines.append(line + (" " + stars[number] if stars and stars[number] else ""))
    return lines


def _page(path: Path, blocks: list[list[str]], *, fontname: str = "cour") -> Path:
    """A page of prose, then each block of lines set at 12 pt spacing in ``fontname``, a blank line between. A line's
    first word starts, and every other word ends, where a typewriter font puts it (6 points a character): in
    proportional type the row names are still flush left and the columns still meet at their right ends, but the
    words fall off the character grid."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 60, 520, 120), PROSE, fontname="tiro", fontsize=10)
    y = 140.0
    for block in blocks:
        for line in block:
            for number, (start, word) in enumerate(_words(line)):
                right = 72 + (start + len(word)) * COURIER_PITCH
                x = 72 + start * COURIER_PITCH if number == 0 else \
                    right - pymupdf.get_text_length(word, fontname=fontname, fontsize=10)
                page.insert_text((x, y), word, fontname=fontname, fontsize=10)
            y += 12
        y += 24
    doc.save(path)
    doc.close()
    return path


def _words(line: str) -> list[tuple[int, str]]:
    """(character offset, word) of each word of a line."""
    return [(match.start(), match.group()) for match in re.finditer(r"\S+", line)]


def _found(path: Path) -> list:
    with pymupdf.open(path) as doc:
        blocks = read_layout(doc[0].get_textpage(flags=TEXT_FLAGS))
    return printout_tables([word for block in blocks for line in block for word in line.words], taken=[])


def test_a_printed_coefficient_table_is_a_table_captioned_by_its_command(tmp_path: Path) -> None:
    printout = ["R> summary(refit(Fitted))", "$Comp.2", *_printed(COEFFICIENTS, NAMES)]
    tables, running = tables_and_running_text(_page(tmp_path / "coefficients.pdf", [printout]))
    assert len(tables) == 1
    table = tables[0]
    assert table.startswith("R> summary(refit(Fitted))\n$Comp.2\n")
    assert "| | Estimate | Std. Error | z value | Pr(>\\|z\\|) |" in table.replace("|  |", "| |")
    assert "| Gendermale | 0.0068805 | 0.0550486 | 0.1250 | 0.900531 |" in table
    assert "| Treatmenteduc | -0.2371848 | 0.0905877 | -2.6183 | 0.008837 |" in table
    assert "0.0068805" not in running and "summary(refit" not in running  # neither the cells nor the command repeat
    assert "standard errors for every coefficient" in running


def test_two_printouts_of_the_same_rows_differ_by_the_commands_that_printed_them(tmp_path: Path) -> None:
    rows = [("Jan 2007", "50.03978", "50.77336"), ("Feb 2007", "50.22448", "51.32342"), ("Mar 2007", "50.81620", "50.81620")]
    first = ["R> to.monthly(x)", *_printed(rows, ("x.Open", "x.High"))]
    second = ["R> period.apply(x, INDEX = ep, FUN = max)", "+   # the same months", *_printed(rows, ("Open", "High"))]
    tables, _ = tables_and_running_text(_page(tmp_path / "two.pdf", [first, second]))
    assert len(tables) == 2
    assert tables[0].startswith("R> to.monthly(x)\n|")
    assert tables[1].startswith("R> period.apply(x, INDEX = ep, FUN = max)\n+ # the same months\n|")
    assert all("| Feb 2007 | 50.22448 | 51.32342 |" in table for table in tables)


def test_significance_codes_after_the_last_column_stay_in_the_row(tmp_path: Path) -> None:
    printout = ["> coef(summary(fit))", *_printed(COEFFICIENTS, NAMES, stars=["", "", "***", "**"])]
    tables, _ = tables_and_running_text(_page(tmp_path / "stars.pdf", [printout]))
    assert len(tables) == 1 and "| Treatmenteduc | -0.2371848 | 0.0905877 | -2.6183 | 0.008837 ** |" in tables[0]


def test_without_a_prompt_above_only_the_title_line_captions_it(tmp_path: Path) -> None:
    rows = [("const", "-0.039415021", "1.315825e-05"), ("crim", "-0.006873007", "4.571544e-05"),
            ("zn", "0.097802487", "0.000000e+00")]
    printout = ["Function value: -476.9687", "Estimates:", *_printed(rows, ("estimate", "gradient"))]
    tables, running = tables_and_running_text(_page(tmp_path / "estimates.pdf", [printout]))
    assert len(tables) == 1 and tables[0].startswith("Estimates:\n|")
    assert "Function value" in running


def test_the_same_layout_in_proportional_type_is_not_a_printout(tmp_path: Path) -> None:
    """Only a typewriter font puts every word at whole characters from the left edge; typeset text is left to the
    other ways of finding tables."""
    lines = ["R> summary(refit(Fitted))", *_printed(COEFFICIENTS, NAMES)]
    assert len(_found(_page(tmp_path / "courier.pdf", [lines]))) == 1
    assert _found(_page(tmp_path / "times.pdf", [lines], fontname="tiro")) == []


def test_code_and_an_index_in_typewriter_type_are_not_tables(tmp_path: Path) -> None:
    code = ["R> fit <- glm(y ~ x1 + x2, family = poisson)", "R> x <- c(1.5, 2.25, 3.125)",
            "R> y <- c(4.5, 5.25, 6.125)", "R> plot(x, y, xlim = c(0, 10))"]
    index = _printed([("\\dbval", "12,", "40"), ("\\dbtoday", "15,", "41"), ("\\dbindex", "20,", "42")], ("page", "line"))
    assert _found(_page(tmp_path / "code.pdf", [code, index])) == []


COUNTS = [("(30,40]", "9135", "4650", "597", "277", "12080", "9648"),
          ("(40,51]", "25535", "15784", "2947", "1439", "35445", "23925"),
          ("(51,62]", "59698", "40171", "10838", "5253", "60539", "40034")]


def _ftable(row_variables: str | None) -> list[str]:
    """Lines as R's ftable prints counts by age class (rows) and outcome by sex (columns): each outcome ending where
    the first of its columns ends, the column variable's name before its levels, the row variable's name on a line
    of its own."""
    label_width = max(len(row_variables or ""), *(len(row[0]) for row in COUNTS)) + len(" sex")
    width = 6
    outcomes = ""
    for number, name in enumerate(("D.nD", "D.DM", "X")):
        outcomes = outcomes.ljust(label_width + 2 * number * (width + 1) + width + 1 - len(name)) + name
    levels = "sex".rjust(label_width) + "".join(" " + level.rjust(width) for level in ("M", "F") * 3)
    rows = [row[0].ljust(label_width) + "".join(" " + value.rjust(width) for value in row[1:]) for row in COUNTS]
    return [outcomes, levels, *([row_variables] if row_variables else []), *rows]


def test_an_ftable_keeps_its_row_variables_line_and_its_outer_column_levels(tmp_path: Path) -> None:
    printout = ["> ftable(addmargins(ae, 1), col.vars=3:2)", *_ftable("cut(A, c(30, a.kn, Inf))")]
    tables, running = tables_and_running_text(_page(tmp_path / "ftable.pdf", [printout]))
    assert len(tables) == 1
    table = tables[0]
    assert table.startswith("> ftable(addmargins(ae, 1), col.vars=3:2)\n|")
    assert "| (40,51] | 25535 | 15784 | 2947 | 1439 | 35445 | 23925 |" in table
    assert "| cut(A, c(30, a.kn, Inf)) |" in table  # the row variable's name is the table's, not running text
    header = table.splitlines()[1]  # the first row of the Markdown table
    assert all(outcome in header for outcome in ("D.nD", "D.DM", "X"))  # the outer levels head their columns
    assert "cut(A" not in running and "25535" not in running and "D.DM" not in running


def test_an_ftable_without_a_row_variables_line_reads_the_same(tmp_path: Path) -> None:
    tables, _ = tables_and_running_text(_page(tmp_path / "plain.pdf", [["> ftable(ae)", *_ftable(None)]]))
    assert len(tables) == 1 and "| (51,62] | 59698 | 40171 | 10838 | 5253 | 60539 | 40034 |" in tables[0]
    header = next(line for line in tables[0].splitlines() if line.startswith("|"))
    assert all(outcome in header for outcome in ("D.nD", "D.DM", "X"))


def test_a_line_above_the_names_that_does_not_end_at_the_columns_is_not_a_heading(tmp_path: Path) -> None:
    """Output printed before a table ("$Comp.2", a title) stays its caption, not a heading row of it."""
    printout = ["R> summary(refit(Fitted))", "Coefficients of the second component", *_printed(COEFFICIENTS, NAMES)]
    tables, _ = tables_and_running_text(_page(tmp_path / "title.pdf", [printout]))
    assert len(tables) == 1
    assert tables[0].startswith("R> summary(refit(Fitted))\nCoefficients of the second component\n|")

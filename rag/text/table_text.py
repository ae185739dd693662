"""What the embedder reads for a table chunk: an outline of its words, not the Markdown grid.

A table chunk is stored and shown as Markdown (caption, header row, one line per row), but that grid
is a poor text to embed: every number splits into several word pieces ("39,608,340,979.04" is a dozen),
every "|" is one more, and the embedders read a fixed window (MiniLM 256 pieces), so the row labels
near the bottom of a financial table never reach the vector at all. Questions ask about a row by its
label and a column by its period, never by the figure they want, so the outline keeps the words and
drops the figures (but not the header's years): the chunk's context (document title, section heading),
the caption, the header cells, then each row's text cells, one row per line.

Filings head a quarter's columns "Three Months Ended March 31," over "2021 | 2022" while people ask
about "the first quarter of 2022" or "Q1 2022", words no cell holds; ``period_names`` spells the
columns the way they are asked about (for the outline and for BM25).

The outline is only ever embedded. BM25 indexes the Markdown itself (``rag.index.keywords``), and what
is stored, cited and highlighted stays the Markdown block.

Two more things a table is found by: the paragraph above or below it that introduces or captions it
(``rag.text.table_captions``, which the chunker adds to the chunk's search context), and the row a
question names word for word (``named_row_label``, which ``rag.retrieval.table_rows`` uses to rank the
table higher).
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag.text.language import CJK_RE
from rag.text.script import to_simplified

_NUMERIC_CELL_RE = re.compile(r"[\s$€£¥￥()（）+\-–—−,.:%％\d*]*")
_SEPARATOR_RE = re.compile(r"\|(\s*:?-{3,}:?\s*\|)+")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
_YEAR_RE = re.compile(r"(?<!\d)(19\d\d|20\d\d)(?!\d)")
# "Three Months Ended March 31" / "Six Months Ended June 30, 2022" / "Quarter Ended September 30":
# the period a column covers, when it ends on a calendar quarter's last day
_PERIOD_RE = re.compile(
    r"\b(three|six|nine|3|6|9)[\s-]+months?\s+ended\s+(march\s+31|june\s+30|september\s+30|december\s+31)"
    r"|\bquarters?\s+ended\s+(march\s+31|june\s+30|september\s+30|december\s+31)", re.IGNORECASE)
_QUARTER_OF_MONTH = {"march": 1, "june": 2, "september": 3, "december": 4}
_ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth"}
_SPAN_MONTHS = {"three": 3, "3": 3, "six": 6, "6": 6, "nine": 9, "9": 9}


def is_separator_row(line: str) -> bool:
    """Whether ``line`` is the ``| --- | --- |`` line under a Markdown table's header."""
    stripped = line.strip()
    return bool(_SEPARATOR_RE.fullmatch(stripped.replace(" ", "")) or _SEPARATOR_RE.fullmatch(stripped))


def split_markdown_table(text: str) -> tuple[list[str], list[list[str]]]:
    """(caption lines, rows of cells) of a Markdown table block; the header is the first row.

    Args:
        text: A table chunk's text: caption lines, then ``| a | b |`` rows and one ``| --- |`` line.
    """
    caption: list[str] = []
    rows: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("|"):
            if is_separator_row(stripped):
                continue
            cells = _CELL_SPLIT_RE.split(stripped.strip("|"))
            rows.append([cell.strip().replace("\\|", "|") for cell in cells])
        elif not rows:
            caption.append(stripped)
        else:  # a row cut at the chunk size continues on a line of its own
            rows[-1][-1] = f"{rows[-1][-1]} {stripped}".strip()
    return caption, rows


def is_figure(cell: str) -> bool:
    """Whether a cell holds only a figure ("$ 1,263", "(482)", "-13.23%", "—") or nothing."""
    return bool(_NUMERIC_CELL_RE.fullmatch(cell))


def table_outline(text: str, *, context: str = "") -> str:
    """The words of a table chunk for the embedder: context, caption, header and row labels.

    Falls back to ``text`` itself when it holds no Markdown rows (a table cut mid-row).

    Args:
        text: The table chunk's Markdown.
        context: Words that situate the table (document title, section heading). Defaults to none.
    """
    caption, rows = split_markdown_table(text)
    if not rows:
        return "\n".join(part for part in (context, text) if part)
    lines = [context] if context else []
    lines += caption
    for number, row in enumerate(rows):
        # the header's years ("2021 | 2022") are words here: questions name the period they ask about
        words = [cell for cell in row if cell and (number == 0 or not is_figure(cell))]
        if words:
            lines.append(" | ".join(words))
        names = period_names(caption, row) if number == 0 else []
        if names:
            lines.append(" | ".join(names))
    return "\n".join(lines)


def period_names(caption: list[str], header: list[str]) -> list[str]:
    """How people name the periods of a table's columns: "first quarter 2022 Q1 2022", one per year.

    Assumes the fiscal year is the calendar year: three months ended March 31 are the first quarter,
    June 30 the second, and so on; six months ended June 30 are the first half, nine months ended
    September 30 the first nine months. A company whose fiscal year ends elsewhere (Apple's "three
    months ended December 28") names its quarters differently; a period not ending on a calendar
    quarter's last day gets no name. The years are those the caption and header print.

    Args:
        caption: The caption lines (the period phrase is usually printed above the years).
        header: The header row's cells.
    """
    text = " ".join([*caption, *header])
    match = _PERIOD_RE.search(text)
    if not match:
        return []
    month = (match.group(2) or match.group(3)).split()[0].lower()
    quarter = _QUARTER_OF_MONTH[month]
    span = _SPAN_MONTHS.get((match.group(1) or "three").lower(), 3)
    if span == 3:
        words = [f"{_ORDINAL[quarter]} quarter {{}}", f"Q{quarter} {{}}"]
    elif span == 6 and quarter == 2:
        words = ["first half {}", "H1 {}", "first six months {}"]
    elif span == 9 and quarter == 3:
        words = ["first nine months {}"]
    else:
        return []
    years = list(dict.fromkeys(_YEAR_RE.findall(text)))
    return [" ".join(word.format(year) for word in words) for year in years]


def table_period_words(text: str) -> str:
    """``period_names`` of a table chunk's Markdown, on one line ("" when it names no period).

    Args:
        text: The table chunk's Markdown.
    """
    caption, rows = split_markdown_table(text)
    return " | ".join(period_names(caption, rows[0] if rows else []))



# a row label's numbering and connective ("一、", "（1）", "2.", "其中：", "加：", "Less:") and its trailing
# note or unit ("(1)", "（元）", "（元/股）") are not words a question repeats
_LABEL_PREFIX_RE = re.compile(r"^(?:[一二三四五六七八九十]+[、.．]|[(（][一二三四五六七八九十\d]+[)）]|\d+[、.．]"
                              r"|其中[:：]|加[:：]|减[:：]|less[:：]|add[:：])\s*", re.IGNORECASE)
_LABEL_SUFFIX_RE = re.compile(r"\s*(?:[(（][^()（）]{0,12}[)）]|[:：])\s*$")
_LATIN_EDGE = r"[0-9a-z]"
# a label this short names no particular row ("Total", "Other", "Basic", "合计", "其他"): Latin letters,
# Chinese characters; a label written as code ("\jcap", "fit_x", "@tab") is a name however short, and no
# question uses it as a word
MIN_LABEL_CHARS, MIN_CJK_LABEL_CHARS, MIN_CODE_LABEL_CHARS = 6, 3, 3
# a caption line longer than this is a sentence ("Table 2: Possible values of …"), not a title a question repeats
MAX_TITLE_CHARS = 24
_CODE_LABEL_RE = re.compile(r"[\\_@]")
# an English question about a cell names its column too: a header word of three letters or more, or a number
_HEADER_TERM_RE = re.compile(r"[a-z][a-z-]{2,}|\d{2,}")
_FUNCTION_WORDS = {"the", "and", "for", "with", "from", "per", "not", "are", "was", "its", "all", "any", "than"}
# a row that is a date or period ("Balance as of March 31, 2022", "Three months ended …") says when, not what:
# a question names the period of every figure it asks about
_DATE_LABEL_RE = re.compile(r"\b(?:january|february|march|april|may|june|july|august|september|october|november"
                            r"|december)\s+\d{1,2}\b|\b(?:months?|years?|quarters?)\s+ended\b|\d{4}\s*年\s*\d{1,2}\s*月")
# a parent company's own statements (母公司, "parent company only") repeat every row of the consolidated ones;
# a question that does not ask for them is about the group
PARENT_RE = re.compile(r"母公司|\bparent\s+company\b|\bregistrant\b", re.IGNORECASE)


def row_label_key(cell: str) -> str:
    """A row label as a question would name it: lower case, without numbering, note marks or unit.

    Args:
        cell: The label cell ("其中：营业收入", "Delivery revenue (1)", "营业收入（元）").
    """
    label = " ".join(cell.split()).lower()
    for _ in range(2):  # "（1）其中：" / "Revenue (1):"
        label = _LABEL_PREFIX_RE.sub("", label)
        label = _LABEL_SUFFIX_RE.sub("", label)
    return _unspace_cjk(label.strip())


def named_row_label(question: str, text: str, context: str = "") -> str:
    """The longest row label of a Markdown table chunk that ``question`` names word for word ("" if none).

    A question about a cell names its row ("What was Freight revenue in …", "2019年营业收入是多少元"):
    a table that holds that label as a row is about the question even when other passages repeat more of
    its words. Only labels that are words count (no figures), of at least ``MIN_LABEL_CHARS`` characters
    (``MIN_CJK_LABEL_CHARS`` in Chinese, ``MIN_CODE_LABEL_CHARS`` for code such as "\\jcap"), Latin ones
    matched as whole words; rows that are dates or periods never count, and a parent company's own
    statement (母公司, "parent company") counts only when the question asks for it. An English question
    must name a column as well (a word or number of the header row: "2022", "SARI"): "How is novelty
    controlled in NC-RAPT?" names a method that is a row of the paper's results tables, and asks about
    the method, not a cell.

    Args:
        question: The user's question.
        text: The table chunk's Markdown.
        context: The chunk's search context, which carries the title of a statement continued from the page
            before (``rag.ingest.table_continuation``). Defaults to none.
    """
    caption, rows = split_markdown_table(text)
    asked = _asked(question)
    if _parent_not_asked(question, caption, context):
        return ""
    if rows and not CJK_RE.search(question) and not _names_a_column(asked, rows[0]):
        return ""
    best = ""
    for row in rows[1:]:
        if not row or is_figure(row[0]):
            continue
        label = row_label_key(row[0])
        if len(label) > len(best) and _names_label(asked, label):
            best = label
    return best


def named_title(question: str, text: str, context: str = "") -> str:
    """A short caption line of a Markdown table chunk that ``question`` names word for word ("" if none).

    A note of an annual report is a table titled by the item it breaks down ("37、销售费用"), whose rows
    the item's line in the statements sums up; "2019年销售费用里，产品仓储和运输花了多少钱" names that
    title and asks for one of the note's rows. The title counts under the rules of ``named_row_label``
    (numbering and unit left off, the same shortest lengths, a parent company's table only when asked
    for); a caption line longer than ``MAX_TITLE_CHARS`` is a sentence, which no question repeats whole.
    Only Chinese titles count: an English caption is a sentence ("Table 2: Possible values of …") or a
    head every question about the statement repeats ("Revenue").

    Args:
        question: The user's question.
        text: The table chunk's Markdown.
        context: The chunk's search context, whose lines after the first (the document's title) count as
            titles too: a statement continued from the page before carries its title there (see
            ``named_row_label``). Defaults to none.
    """
    caption, rows = split_markdown_table(text)
    if not rows:
        return ""
    if _parent_not_asked(question, caption, context):
        return ""
    asked = _asked(question)
    # the context's first line is the document's title (``rag.ingest.chunking``), which names all its tables alike
    titles = (row_label_key(line) for line in [*caption, *context.splitlines()[1:]])
    return max((title for title in titles
                if CJK_RE.search(title) and len(title) <= MAX_TITLE_CHARS and _names_label(asked, title)),
               key=len, default="")


def _asked(question: str) -> str:
    """The question as labels are matched against it: lower case, single spaces, none beside Chinese, Chinese in
    simplified script (a traditional question names 地圖 where the table prints 地图, as BM25 reads both)."""
    return to_simplified(_unspace_cjk(" ".join(question.lower().split())))


def _parent_not_asked(question: str, caption: list[str], context: str) -> bool:
    """Whether the table is a parent company's own statement (caption or context) and the question does not ask
    for one: it repeats every row of the consolidated statement, which the question is about."""
    return any(PARENT_RE.search(line) for line in [*caption, context]) and not PARENT_RE.search(question)


def _names_label(asked: str, label: str) -> bool:
    """Whether the (lower-cased, unspaced) question names ``label``: long enough to name something, not a
    figure or a period, Latin labels as whole words."""
    shortest = (MIN_CJK_LABEL_CHARS if CJK_RE.search(label)
                else MIN_CODE_LABEL_CHARS if _CODE_LABEL_RE.search(label) else MIN_LABEL_CHARS)
    if len(label) < shortest or is_figure(label) or _DATE_LABEL_RE.search(label):
        return False
    simplified = _simplified_label(label)
    return bool(re.search(f"(?<!{_LATIN_EDGE}){re.escape(simplified)}(?:e?s)?(?!{_LATIN_EDGE})", asked))  # "revenues"


@lru_cache(maxsize=16384)  # the same row labels come back query after query
def _simplified_label(label: str) -> str:
    return to_simplified(label)


def _names_a_column(asked: str, header: list[str]) -> bool:
    """Whether the (lower-cased) question holds a word or number of the header row's cells past the label's,
    words of five letters or more compared by their first five ("mature" names "Maturity")."""
    terms = {_stem(term) for cell in header[1:] for term in _HEADER_TERM_RE.findall(cell.lower())
             if term not in _FUNCTION_WORDS}
    return any(_stem(word) in terms for word in _HEADER_TERM_RE.findall(asked))


def _stem(word: str) -> str:
    return word[:5]


def _unspace_cjk(text: str) -> str:
    """Drop spaces next to Chinese characters ("营业收入 （元）" and "营业收入（元）" are one label)."""
    return re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef])\s+|\s+(?=[\u3000-\u9fff\uff00-\uffef])", "", text)

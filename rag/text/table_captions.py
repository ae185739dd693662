"""What introduces or captions a table in the running text: searched with the table, never shown with it.

Filings print a table's subject in the paragraph above it ("The following tables present our revenues
disaggregated by offering …", ``table_lead_in``); papers print it in a caption paragraph above or below
the grid ("Table 2: Overall experiment results on six tasks …", ``caption_below``) that the caption rules
of ``rag.ingest.tables`` leave in the running text when it ends like a sentence. The chunker
(``rag.ingest.chunking``) adds what these find to a table chunk's search context.
"""

from __future__ import annotations

import re

from rag.text.language import count_tokens

_PARAGRAPH_BREAK_RE = re.compile(r"\n\s*\n")
_NON_SPACE_RE = re.compile(r"\S")
# "The following table(s) …", "… as follows:", "如下表", "见下表": a sentence that introduces a table
_INTRODUCES_RE = re.compile(r"\b(?:the\s+)?following\s+tables?\b|\btables?\s+below\b|\bas\s+follows\b|如下表|下表",
                            re.IGNORECASE)
_COLON_END_RE = re.compile(r"[:：]\s*$")
# a caption paragraph of a paper's table ("Table 2: Overall experiment results …", "TABLE IV", an appendix's or
# supplement's "Table A1." / "Table S2:", "表 3-1 …"), or of
# its part on a later page ("Table 2 (continued)", "续表 2"); a sentence that starts by naming one ("Table 4
# shows …") is running text
CAPTION_LABEL_RE = re.compile(r"^(?:[Tt]able|TABLE|[Tt]ab\.)\s*(?:[A-Z]\.?)?[\dIVX]+"
                              r"(?:\s*[:.：]|\s+[A-Z]|\s*\(?[Cc]ont|\s*$)"
                              r"|^续?表\s*[\d一二三四五六七八九十]")
# "表3.2 列出了…", "表 4 中…": a Chinese sentence that starts by naming a table, not its caption (English ones
# fail CAPTION_LABEL_RE: "Table 2 shows")
_REFERS_RE = re.compile(r"续?表[\d.]+(?:和表[\d.]+)?(?:列|给|是|为|中|所|显|展|的|和|与|及|则|可|提)")
_SENTENCE_RE = re.compile(r"[^.。!?！？;；]+(?:[.。!?！？;；](?!\d)|$)")
# the number of a table's label, as text names it and a caption starts with it (``referenced_labels``,
# ``caption_label_key``): "Table 1", "Tables 2", "Tab. 3", "TABLE IV", an appendix's "Table A1", "表1", "表 3-1"
_LABEL_NUMBER = r"((?:[A-HS]\.?)?\d+(?:\s*[.\-–—－]\s*\d+)*|[IVX]+\b)"
# (in running text, not the 表 of 代表 "stands for", 发表 "publish", 列表 "list", 仪表, 报表, 课表)
_REFERENCE_RE = re.compile(r"(?:\b(?:[Tt]ables?|TABLES?|[Tt]ab\.)\s*|(?<![代发列仪报课])表\s*)" + _LABEL_NUMBER)
_CAPTION_NUMBER_RE = re.compile(r"^(?:[Tt]able|TABLE|[Tt]ab\.|续?表)\s*" + _LABEL_NUMBER)
_COMMAND = r"R?>"  # R's prompt, "R>" or ">", before what a console's user typed (``rag.ingest.printout_tables``)
COMMAND_LINE_RE = re.compile(rf"^{_COMMAND}[^\S\n]", re.MULTILINE)  # a line that starts a command
_PROMPT_LINE_RE = re.compile(rf"(?:{_COMMAND}|\+)\s")  # a line that starts a command or continues one ("+")
MIN_LEAD_IN_TOKENS = 6  # a colon-ended form label ("其他说明：") is not a subject
MAX_LEAD_IN_CHARS = 300
_LOOK_BACK_CHARS = 2000


def is_caption_label(text: str) -> bool:
    """Whether a line starts with a table's caption label ("Table 3:", "表 1.2 复杂表格"), not a sentence about one."""
    return bool(CAPTION_LABEL_RE.match(text)) and not _REFERS_RE.match(re.sub(r"\s+", "", text))


def has_labelled_caption(text: str, start: int) -> bool:
    """Whether the table block at ``start`` in ``text`` carries a "Table N" caption line of its own."""
    for line in text[start:start + _LOOK_BACK_CHARS].split("\n"):
        if line.startswith("|"):
            return False
        if CAPTION_LABEL_RE.match(line.strip()):
            return True
    return False


def lead_in_before(text: str, spans: list[tuple[int, int]], start: int, *, captions: bool = True) -> str:
    """``table_lead_in`` of the table at ``start`` in ``text`` (a document's full text).

    The parts of a split table (and tables printed one after another) share the paragraph above the
    first of them, so spans separated only by whitespace are walked back over first.

    Args:
        text: The document's full text.
        spans: (start, end) of every table block in ``text``.
        start: Where the table chunk starts.
        captions: Whether a "Table N" caption paragraph counts (not for a table with a caption of its own:
            the paragraph above it is then another table's).
    """
    first = start
    for span_start, span_end in sorted(spans, reverse=True):
        if span_start > first:
            continue
        if span_end <= first and _NON_SPACE_RE.search(text, span_end, first):
            break  # text between: every earlier table is further away still
        first = span_start
    before = text[max(0, first - _LOOK_BACK_CHARS):first]
    if _PROMPT_LINE_RE.match(text, first):  # a program's printout, captioned by the command that printed it
        return printout_lead_in(before)
    return table_lead_in(before, captions=captions)


def caption_below(text: str, spans: list[tuple[int, int]], end: int) -> str:
    """The caption paragraph right below the table ending at ``end`` ("Table 3: …" under the grid, as
    ACL papers set it), walking over the later parts of a split table first; "" when the next
    paragraph is not a caption.

    Args:
        text: The document's full text.
        spans: (start, end) of every table block in ``text``.
        end: Where the table chunk ends.
    """
    last = end
    for span_start, span_end in sorted(spans):
        if span_end < last:
            continue
        if span_start >= last and _NON_SPACE_RE.search(text, last, span_start):
            break  # text between: every later table is further away still
        last = max(last, span_end)
    first = _NON_SPACE_RE.search(text, last)
    if first is None:
        return ""
    paragraph_break = _PARAGRAPH_BREAK_RE.search(text, first.start())
    paragraph_end = paragraph_break.start() if paragraph_break else len(text)
    paragraph = " ".join(text[first.start():paragraph_end].split())
    if not CAPTION_LABEL_RE.match(paragraph):
        return ""
    following = _NON_SPACE_RE.search(text, paragraph_end)
    if following is not None and any(span_start == following.start() for span_start, _ in spans):
        return ""  # a caption set above the next table is that table's
    return paragraph[:MAX_LEAD_IN_CHARS].strip()


def table_lead_in(before: str, *, captions: bool = True) -> str:
    """The sentence right above a table that introduces it ("The following tables present our revenues…").

    Filings print a table's subject in the paragraph above it, not in a caption: "The following tables
    present our revenues disaggregated by offering and geographical region … (in millions):" over a grid
    headed only "Three Months Ended March 31,". A paper's caption paragraph above the grid ("Table 2:
    Overall experiment results …") counts whole, up to ``MAX_LEAD_IN_CHARS``. Otherwise the
    paragraph counts when it names "the following table(s)" / "如下表" / "下表", or ends with a
    colon (and is not a short form label such as "其他说明："); from it, the sentences
    from the one that names the table (else the last sentence) to its end, at most
    ``MAX_LEAD_IN_CHARS`` characters. "" otherwise.

    Args:
        before: The document text before the table (the paragraph above it last).
        captions: Whether a caption paragraph counts.
    """
    paragraphs = [p for p in _PARAGRAPH_BREAK_RE.split(before) if p.strip()]
    if not paragraphs:
        return ""
    paragraph = " ".join(paragraphs[-1].split())
    if CAPTION_LABEL_RE.match(paragraph):
        return paragraph[:MAX_LEAD_IN_CHARS].strip() if captions else ""
    introduces = _INTRODUCES_RE.search(paragraph)
    if not introduces and not (_COLON_END_RE.search(paragraph) and count_tokens(paragraph) >= MIN_LEAD_IN_TOKENS):
        return ""
    sentences = [s.strip() for s in _SENTENCE_RE.findall(paragraph) if s.strip()]
    first = next((i for i, s in enumerate(sentences) if _INTRODUCES_RE.search(s)), len(sentences) - 1)
    return " ".join(sentences[first:])[:MAX_LEAD_IN_CHARS].strip()


def printout_lead_in(before: str) -> str:
    """The last sentences (at most ``MAX_LEAD_IN_CHARS``) of the prose above the commands that printed a table.

    A vignette says what a printout shows in the paragraph before its code ("… use the leave1out() function to
    repeatedly fit the model, leaving out one study at a time."), seldom with "the following table" or a colon;
    the commands between (paragraphs of prompt lines) are passed over.
    """
    paragraphs = [p for p in _PARAGRAPH_BREAK_RE.split(before) if p.strip()]
    while paragraphs and _PROMPT_LINE_RE.match(paragraphs[-1].strip()):
        paragraphs.pop()
    if not paragraphs:
        return ""
    sentences = [s.strip() for s in _SENTENCE_RE.findall(" ".join(paragraphs[-1].split())) if s.strip()]
    kept: list[str] = []
    for sentence in reversed(sentences):
        if kept and len(" ".join([sentence, *kept])) > MAX_LEAD_IN_CHARS:
            break
        kept.insert(0, sentence)
    return " ".join(kept)[-MAX_LEAD_IN_CHARS:].strip()


def referenced_labels(text: str) -> set[str]:
    """The table labels a passage names ("see Table 2 and Table 3" -> {"2", "3"}), keyed as ``caption_label_key``."""
    return {_label_key(match.group(1)) for match in _REFERENCE_RE.finditer(text)}


def caption_label_key(line: str) -> str:
    """The label a caption line starts with ("Table 1: …" -> "1", "续表 3–1 …" -> "3-1"); "" for other lines."""
    match = _CAPTION_NUMBER_RE.match(line.strip())
    return _label_key(match.group(1)) if match else ""


def _label_key(number: str) -> str:
    return re.sub(r"[–—－]", "-", re.sub(r"\s+", "", number))

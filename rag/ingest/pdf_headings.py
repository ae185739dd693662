"""Find headings in a PDF that has no outline, from font sizes and bold type.

A heading is a short line set noticeably larger than the body font that does not end like a
sentence. The body font is the size carrying the most characters. Filings and reports often set
their headings in bold at the body size instead: a block of one or two such bold lines, followed by
a block that is not all bold (longer bold runs are table headers), is a heading too, one level below the
larger sizes. Lines that repeat on many pages (running headers) are dropped, consecutive heading
lines of one block are merged (wrapped titles), and the distinct heading sizes, largest first,
become levels 1-3.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rag.documents import ParsedDocument, Section
from rag.text.language import CJK_RE, count_tokens

MIN_RATIO = 1.08  # heading size / body size
MIN_POINTS = 0.8  # and at least this many points larger
MAX_TOKENS = 14
MAX_LEVELS = 3
_SENTENCE_END_RE = re.compile(r"[.,;:!?，。；：！？、]$")
_LETTERS_RE = re.compile(r"[^\W\d_]")


@dataclass
class LineInfo:
    """One text line of a PDF page: where it sits in ``Page.text`` and how it is set."""

    page: int
    start: int
    end: int
    size: float
    bold: bool
    block: int
    text: str = ""
    upright: bool = True  # False for text set sideways (an arXiv stamp in the margin)


def detect_headings(document: ParsedDocument, lines: list[LineInfo]) -> list[Section]:
    """Sections guessed from font sizes; empty when the document has one uniform size."""
    body = body_font_size(lines)
    if body <= 0:
        return []
    bold_blocks = _bold_blocks(lines, body)
    candidates = [line for line in lines
                  if _looks_like_heading(line, body) or (line.page, line.block) in bold_blocks]
    candidates = _drop_repeated(candidates, len(document.pages))
    merged = _merge_wrapped(candidates)
    sizes = sorted({round(line.size * 2) / 2 for line, _ in merged if line.size - body >= MIN_POINTS}, reverse=True)
    offsets = document.page_offsets()
    sections = []
    for line, title in merged:
        size = round(line.size * 2) / 2
        level = min(sizes.index(size) + 1 if size in sizes else len(sizes) + 1, MAX_LEVELS)
        sections.append(Section(title=title, level=level, page=line.page,
                                offset=offsets[line.page - 1] + line.start))
    return sections


def body_font_size(lines: list[LineInfo]) -> float:
    """The font size (to half a point) that carries the most characters."""
    weights: Counter[float] = Counter()
    for line in lines:
        if line.size > 0:
            weights[round(line.size * 2) / 2] += line.end - line.start
    return weights.most_common(1)[0][0] if weights else 0.0


def _looks_like_heading(line: LineInfo, body: float) -> bool:
    text = line.text.strip()
    if line.size < body * MIN_RATIO or line.size - body < MIN_POINTS:
        return False
    return _names_a_section(text)


def _names_a_section(text: str) -> bool:
    """Short, not ending like a sentence, and with letters enough to name something: two Chinese
    characters (目录) do, two Latin letters (a cover page's "OR") do not."""
    if not text or _SENTENCE_END_RE.search(text):
        return False
    letters = len(_LETTERS_RE.findall(text))
    if letters < (2 if CJK_RE.search(text) else 3):
        return False
    return count_tokens(text) <= MAX_TOKENS


def _bold_blocks(lines: list[LineInfo], body: float) -> set[tuple[int, int]]:
    """Blocks that are headings set in bold at the body size: runs of at most two consecutive
    blocks of one or two bold, heading-like lines, followed by a block that is not all bold. Longer
    bold runs are table headers or lists."""
    blocks: dict[tuple[int, int], list[LineInfo]] = {}
    for line in lines:
        blocks.setdefault((line.page, line.block), []).append(line)
    found: set[tuple[int, int]] = set()
    run: list[tuple[int, int]] = []
    for key, block in blocks.items():
        if len(block) <= 2 and all(_bold_heading_line(line, body) for line in block):
            run.append(key)
            continue
        if run and len(run) <= 2 and not all(line.bold for line in block):
            found.update(run)
        run = []
    return found


def _bold_heading_line(line: LineInfo, body: float) -> bool:
    text = line.text.strip()
    return line.bold and abs(line.size - body) < MIN_POINTS and _names_a_section(text)


def _drop_repeated(lines: list[LineInfo], page_count: int) -> list[LineInfo]:
    """Running headers repeat on many pages; real headings rarely do."""
    if page_count < 4:
        return lines
    pages_per_text: dict[str, set[int]] = {}
    for line in lines:
        pages_per_text.setdefault(line.text.strip().lower(), set()).add(line.page)
    return [line for line in lines if len(pages_per_text[line.text.strip().lower()]) < 3]


def _merge_wrapped(lines: list[LineInfo]) -> list[tuple[LineInfo, str]]:
    """Join consecutive heading lines of one block and one size into one title."""
    merged: list[tuple[LineInfo, str]] = []
    previous: LineInfo | None = None
    for line in lines:
        text = " ".join(line.text.split())
        if (previous and merged and previous.page == line.page and previous.block == line.block
                and abs(previous.size - line.size) < 0.25):
            first, title = merged[-1]
            merged[-1] = (first, f"{title} {text}")
        else:
            merged.append((line, text))
        previous = line
    return merged


def first_page_title(lines: list[LineInfo]) -> str:
    """The largest text on page 1 when it clearly stands out from the body (a paper's title)."""
    body = body_font_size(lines)
    first = [line for line in lines if line.page == 1 and line.text.strip() and line.upright]
    if body <= 0 or not first:
        return ""
    top = max(first, key=lambda line: line.size)
    if top.size < body * 1.25:
        return ""
    def same_size(line: LineInfo) -> bool:
        return abs(line.size - top.size) < 0.25

    # a title broken by "\\" comes as blocks of its own, one per line: take the run of lines set like it
    start = end = first.index(top)
    while start > 0 and same_size(first[start - 1]):
        start -= 1
    while end + 1 < len(first) and same_size(first[end + 1]):
        end += 1
    block = [line for line in first if line.block == top.block and same_size(line)]
    run = [line for number, line in enumerate(first) if start <= number <= end or line in block]
    for title_lines in (run, block):
        title = " ".join(" ".join(line.text.split()) for line in title_lines)
        if count_tokens(title) <= 30 and len(_LETTERS_RE.findall(title)) >= 2:
            return title
    return ""

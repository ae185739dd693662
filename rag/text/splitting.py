"""Offset-based text splitting: every piece is a ``(start, end)`` span of one shared string.

Chunkers never copy or edit text; they only move offsets. That is what lets every chunk satisfy
``chunk.text == full_text[chunk.char_start:chunk.char_end]`` and lets citations map back to pages.
Sizes are in ``count_tokens`` tokens. The token count of a span is never more than the sum of its
pieces' counts, so packing pieces by their summed counts never overflows a chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.text.language import TOKEN_RE, count_tokens

# Coarse to fine; a piece ends right after its separator, so pieces tile the text with no gaps.
PARAGRAPH_RE = re.compile(r"\n[ \t]*\n\s*")
LINE_RE = re.compile(r"\n\s*")
SENTENCE_RE = re.compile(r"[。！？；]+[”’」』）)\"']*\s*|[.!?;]+[”’\"')\]]*\s+")
CLAUSE_RE = re.compile(r"[，、：]\s*|[,:]\s+")
SPACE_RE = re.compile(r"\s+")
SEPARATORS: tuple[re.Pattern[str], ...] = (PARAGRAPH_RE, LINE_RE, SENTENCE_RE, CLAUSE_RE, SPACE_RE)
_SENTENCE_BOUNDARIES = re.compile(f"{PARAGRAPH_RE.pattern}|{SENTENCE_RE.pattern}")
# in a source passage a line break before a Markdown table row ends a "sentence" too, so a table
# citation quotes one row (chunking keeps a table whole and never cuts it this way)
_PASSAGE_BOUNDARIES = re.compile(f"{PARAGRAPH_RE.pattern}|{SENTENCE_RE.pattern}|\n(?=\|)")
# A chunk may hold at most this many characters per token of its budget. Ordinary prose never gets
# near it; it stops a 50 kB base64 blob or URL (one "token") from becoming one giant chunk.
MAX_CHARS_PER_TOKEN = 12


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    tokens: int


def span(text: str, start: int, end: int) -> Span:
    return Span(start, end, count_tokens(text[start:end]))


def cut(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[Span]:
    """Split ``text[start:end]`` right after each match of ``pattern``."""
    bounds = [start]
    for match in pattern.finditer(text, start, end):
        if bounds[-1] < match.end() < end:
            bounds.append(match.end())
    bounds.append(end)
    return [span(text, a, b) for a, b in zip(bounds, bounds[1:])]


def recursive_split(text: str, start: int, end: int, size: int, level: int = 0) -> list[Span]:
    """Pieces of at most ``size`` tokens, cutting at the coarsest separator that works.

    Paragraphs, then lines, then sentence ends (。！？!?.;；), then clauses (，、, ), then spaces, then
    single characters, so a run of CJK text with no punctuation still splits.
    """
    whole = span(text, start, end)
    if _fits(whole, size):
        return [whole]
    if level >= len(SEPARATORS):
        return [span(text, position, position + 1) for position in range(start, end)]
    pieces = cut(text, start, end, SEPARATORS[level])
    if len(pieces) == 1:
        return recursive_split(text, start, end, size, level + 1)
    result: list[Span] = []
    for piece in pieces:
        if _fits(piece, size):
            result.append(piece)
        else:
            result.extend(recursive_split(text, piece.start, piece.end, size, level + 1))
    return result


def _fits(piece: Span, size: int) -> bool:
    return piece.tokens <= size and piece.end - piece.start <= size * MAX_CHARS_PER_TOKEN


def sentences(text: str, start: int, end: int, max_tokens: int) -> list[Span]:
    """Sentence spans (English and CJK ends, paragraph breaks); overlong ones are split further."""
    result: list[Span] = []
    for piece in cut(text, start, end, _SENTENCE_BOUNDARIES):
        if _fits(piece, max_tokens):
            result.append(piece)
        else:
            result.extend(recursive_split(text, piece.start, piece.end, max_tokens, level=1))
    return result


def pack(text: str, pieces: list[Span], size: int, overlap: int, *, partial_overlap: bool = True
         ) -> list[tuple[int, int]]:
    """Greedily pack consecutive pieces into spans of at most ``size`` tokens (and
    ``size * MAX_CHARS_PER_TOKEN`` characters).

    Each span after the first starts up to ``overlap`` tokens before the previous one ended: at a
    piece boundary when that gives at least half the overlap, otherwise (if ``partial_overlap``) at
    a token boundary inside a piece. Overlap never exceeds half of the previous span.
    """
    spans: list[tuple[int, int]] = []
    if not pieces:
        return spans
    max_chars = size * MAX_CHARS_PER_TOKEN
    head, first = pieces[0], 0
    while True:
        total, nxt = head.tokens, first + 1
        while (nxt < len(pieces) and total + pieces[nxt].tokens <= size
               and pieces[nxt].end - head.start <= max_chars):
            total += pieces[nxt].tokens
            nxt += 1
        spans.append((head.start, pieces[nxt - 1].end))
        if nxt >= len(pieces):
            return spans
        budget = min(overlap, size - pieces[nxt].tokens, total // 2)
        head, first = _overlap_head(text, pieces, first, nxt, head, budget, partial_overlap)
        if pieces[nxt].end - head.start > max_chars:  # the overlap would crowd out the next piece
            head, first = pieces[nxt], nxt


def _overlap_head(text: str, pieces: list[Span], first: int, nxt: int, head: Span, budget: int,
                  partial_overlap: bool) -> tuple[Span, int]:
    """The head piece (maybe a partial one) and its index that the next span starts with."""
    if budget <= 0:
        return pieces[nxt], nxt
    best, accumulated, taken = nxt, 0, 0
    for index in range(nxt - 1, first, -1):
        accumulated += pieces[index].tokens
        if accumulated > budget:
            break
        best, taken = index, accumulated
    if taken * 2 >= budget or not partial_overlap:
        return pieces[best], best
    # Start inside a piece, at the token that leaves ``budget`` tokens of overlap.
    previous_start = head.start
    starts = [match.start() for match in TOKEN_RE.finditer(text, previous_start, pieces[nxt - 1].end)]
    candidates = [position for position in starts[-budget:] if position > previous_start]
    if not candidates:
        return pieces[best], best
    position = candidates[0]
    index = max(i for i in range(first, nxt) if (pieces[i].start if i != first else head.start) <= position)
    partial = span(text, position, pieces[index].end)
    carried = partial.tokens + sum(piece.tokens for piece in pieces[index + 1:nxt])
    if carried > budget or carried <= taken:
        return pieces[best], best
    return partial, index


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Move ``start``/``end`` inwards past whitespace (the text itself is never edited)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def passage_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of a source text, trimmed of surrounding space."""
    spans, start = [], 0
    for match in _PASSAGE_BOUNDARIES.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    trimmed = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            trimmed.append((s, e))
    return trimmed

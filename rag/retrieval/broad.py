"""Broad questions: summaries, "what problem does this paper address and how", comparisons.

The factoid machinery (sentence-level evidence, the answerability gate's question coverage) assumes one
sentence holds the answer. A broad question's answer is spread over the abstract, the introduction or a
section, so it gets whole passages, a larger budget, and no factoid gate; its claims are still verified.
Which passages depends on what it asks (``rag.retrieval.postprocessors.broad``): a question about the
document as a whole gets the document's opening, one that names a section gets that section, and one that
names a topic ("Summarise the results of operations") gets what retrieval found for the topic. Which questions
are broad is ``rag.retrieval.question_kind``'s to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from rag.ingest.chunking import HEADING_SEPARATOR
from rag.retrieval.question_kind import SECTION_NUMBER, plain_question
from rag.text.tokenizer import tokenize

_SECTION_TITLE = (
    re.compile(r"\b(?:section|chapter|part)\s+(?:on|about|titled|called|named|entitled)\s+"
               r"[\"“‘']?([^\"”’'?!.,;]{3,80}?)[\"”’']?(?:\s+(?:of|in)\s+(?:this|the)\b|[?!.,;]|$)",
               re.IGNORECASE),
    re.compile(r"[\"“‘']([^\"”’']{3,80})[\"”’']\s+(?:section|chapter|part)\b", re.IGNORECASE),
    re.compile(r"\bthe\s+([A-Za-z][\w\s&-]{2,60}?)\s+(?:section|chapter)\b", re.IGNORECASE),
    re.compile(r"[“「《\"]([^”」》\"]{2,30})[”」》\"]\s*(?:这一?|那一?|一)?(?:章|节|部分)"),
    re.compile(r"(?:关于|有关)([^，。？?,]{2,20}?)的(?:章节|部分|一章|一节)"),
)
# The words of a question about a document as a whole ("What problem does this paper address, and how?",
# "请概述这个项目的目标与意义"): once they are taken away nothing names a topic, so the document's opening
# (title, abstract, introduction) is what such a question needs.
_FRAME_WORDS = (
    "paper document report article study work works book project authors author problem problems issue issues "
    "question address addresses addressed tackle tackles solve solves summarise summarize summary overview "
    "outline main key contribution contributions idea ideas point points finding findings takeaway takeaways "
    "result results goal goals aim aims purpose objective objectives method methods approach propose proposes "
    "proposed explain describe give brief briefly overall general whole motivation please tell what which how "
    "does do did about say says mean means can could would its it their they them this that these those there "
    "we our us you your "
    "请 概述 概括 总结 简述 介绍 一下 这个 这篇 这份 这本 本文 本书 论文 文章 报告 项目 文档 书 目标 意义 主要 内容 "
    "贡献 观点 思想 问题 方法 结论 解决 什么 讲 哪些 有 如何 怎么 怎样 简要 目的 核心 背景 动机 篇 份 本 个")
# Front matter that the numbering of unnumbered sections skips.
_FRONT_MATTER = re.compile(
    r"^(?:abstract|contents|table of contents|preface|foreword|acknowledg\w*|摘要|目录|前言|序言?)$", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"^(?:section|chapter|part|§)?\s*(\d+(?:\.\d+)*)(?!\d)|"
                             r"^第\s*([0-9]+|[一二三四五六七八九十]+)\s*[章节部分篇]", re.IGNORECASE)
_CHINESE_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")}
_WORD = re.compile(r"\w", re.UNICODE)


@dataclass(frozen=True)
class SectionName:
    """A section a question names: by its number ("3.2", "第三章" -> "3") or by its title."""

    number: str | None = None
    title: str | None = None


def named_section(question: str) -> SectionName | None:
    """The section a question names ("Summarise section 3" -> number "3"; "the Related Work section" -> title)."""
    text = plain_question(question)
    match = SECTION_NUMBER.search(text)
    if match:
        number = match.group(1) or _arabic(match.group(2))
        if number:
            return SectionName(number=number)
    for pattern in _SECTION_TITLE:
        found = pattern.search(text)
        if found and _content_words(found.group(1)):
            return SectionName(title=found.group(1).strip())
    return None


def asks_about_whole_document(question: str, subject: str = "") -> bool:
    """True when a broad question names no section and no topic but the document's own subject.

    Args:
        question: The question.
        subject: What names the document: its title and file name ("Summarise the goal of h2oGPT" asks
            about the whole of "h2oGPT: Democratizing Large Language Models").
    """
    if named_section(question) is not None:
        return False
    return not (_content_words(plain_question(question)) - frame_tokens() - _content_words(plain_question(subject)))


def subject_words(question: str, subject: str) -> set[str]:
    """The words of ``subject`` (a document's title and file name) that the question uses, its framing aside
    ("summarise", "this paper"). A Chinese word counts wherever it stands in the question, since jieba may cut
    the question differently ("华锦是怎么看" is one token); words of one character ("多", "年") name nothing."""
    text = plain_question(question)
    own = _content_words(text)
    return {word for word in _content_words(plain_question(subject)) - frame_tokens()
            if len(word) > 1 and (word in own or (not word.isascii() and word in text))}


def section_chunks(chunks: Sequence, section: SectionName) -> list:
    """The chunks of ``section`` in document order, the first chunk under each of its headings first.

    A number matches a heading that carries it ("3 Method", "3.2 Setup", "Chapter 3", "第3章", "第三章");
    when no top-level heading carries a number (outlines often drop them: "Introduction", "线性模型"), the
    number counts the top-level headings in order, front matter (abstract, contents, preface) skipped.
    A title matches the heading holding most of its words (at least half of them).
    """
    if section.number is not None:
        found = [c for c in chunks if any(_carries_number(part, section.number) for part in heading_parts(c))]
        if not found and not any(_leading_number(part) for part in _top_headings(chunks)):
            found = _by_position(chunks, section.number)
    else:
        found = _by_title(chunks, section.title or "")
    return _leads_first(found)


def heading_parts(chunk) -> list[str]:
    """The headings a chunk sits under, outermost first."""
    heading_path = getattr(chunk, "heading_path", "") or ""
    return [part.strip() for part in heading_path.split(HEADING_SEPARATOR) if part.strip()]


def _top_headings(chunks: Iterable) -> list[str]:
    return list(dict.fromkeys(parts[0] for parts in map(heading_parts, chunks) if parts))


def _leading_number(heading: str) -> str | None:
    match = _LEADING_NUMBER.match(heading)
    if not match:
        return None
    return match.group(1) or _arabic(match.group(2))


def _carries_number(heading: str, number: str) -> bool:
    found = _leading_number(heading)
    return found is not None and (found == number or found.startswith(number + "."))


def _by_position(chunks: Sequence, number: str) -> list:
    """Section ``number`` of a document whose headings carry no numbers: the n-th heading at each level."""
    wanted = [int(part) for part in number.split(".")]
    prefix: list[str] = []
    for depth, position in enumerate(wanted):
        names = list(dict.fromkeys(parts[depth] for parts in map(heading_parts, chunks)
                                   if len(parts) > depth and parts[:depth] == prefix))
        if depth == 0:
            names = [name for name in names if not _FRONT_MATTER.match(name)]
        if not 1 <= position <= len(names):
            return []
        prefix = prefix + [names[position - 1]]
    return [c for c in chunks if heading_parts(c)[: len(prefix)] == prefix]


def _by_title(chunks: Sequence, title: str) -> list:
    wanted = _content_words(title) - frame_tokens()
    if not wanted:
        return []
    best, best_share = None, 0.5
    for parts in dict.fromkeys(tuple(heading_parts(c)) for c in chunks):
        for depth, heading in enumerate(parts):
            share = len(wanted & _content_words(heading)) / len(wanted)
            if share > best_share or (share == best_share and best is not None and depth < len(best)):
                best, best_share = parts[: depth + 1], share
    if best is None:
        return []
    return [c for c in chunks if tuple(heading_parts(c)[: len(best)]) == best]


def _leads_first(chunks: list) -> list:
    """The first chunk under each heading, in order, then the rest: a long section's summary sees all its parts."""
    leads, rest, seen = [], [], set()
    for chunk in chunks:
        key = tuple(heading_parts(chunk))
        (rest if key in seen else leads).append(chunk)
        seen.add(key)
    return leads + rest


def _content_words(text: str) -> set[str]:
    return {token for token in tokenize(text) if _WORD.search(token)}


@lru_cache(maxsize=1)
def frame_tokens() -> frozenset[str]:
    return frozenset(_content_words(_FRAME_WORDS))


def _arabic(numeral: str | None) -> str | None:
    """"3" or "三" / "十二" as "3" / "12" (chapter numbers up to 99)."""
    if not numeral:
        return None
    if numeral.isdigit():
        return str(int(numeral))
    if "十" in numeral:
        tens, _, units = numeral.partition("十")
        value = (_CHINESE_DIGITS.get(tens, 0) if tens else 1) * 10 + (_CHINESE_DIGITS.get(units, 0) if units else 0)
    else:
        value = _CHINESE_DIGITS.get(numeral, 0)
    return str(value) if value else None

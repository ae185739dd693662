"""Broad questions: summaries, "what problem does this paper address and how", comparisons.

The factoid machinery (sentence-level evidence, the answerability gate's question coverage) assumes one
sentence holds the answer. A broad question's answer is spread over the abstract, the introduction or a
section, so it gets whole passages, a larger budget, and no factoid gate; its claims are still verified.
Which passages depends on what it asks (``rag.retrieval.postprocessors.broad``): a question about the
document as a whole gets the document's opening, one that names a section gets that section, and one that
names a topic ("Summarise the results of operations") gets what retrieval found for the topic.

Questions are read in simplified script, so traditional Chinese (總結, 有什麼區別) is recognised too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from rag.ingest.chunking import HEADING_SEPARATOR
from rag.text.script import to_simplified
from rag.text.tokenizer import tokenize

_BROAD_EN = re.compile(
    r"\b(?:summari[sz]e|summary|overview|outline|main (?:idea|point|contribution|finding|result)s?|"
    r"key (?:idea|point|contribution|finding|takeaway|result|risk)s?|"
    r"what (?:problem|issue|question)s? (?:does|do|did|is|are)|"
    r"what is (?:this|the) (?:paper|document|report|article|book|chapter|section) about|"
    r"how (?:does|do|did) (?:the|this|their|its) (?:method|approach|system|model|framework|paper) work|"
    r"(?:how|in what ways?) (?:do|does|did) .{1,60}? differ|difference between|compare|comparison|"
    r"(?:what|which) (?:are |were )?(?:the |its |their |some )?(?:main |key )?(?:limitations|weaknesses|shortcomings)|"
    r"what does (?:the |this )?.{1,60}? (?:section|chapter) (?:say|cover|discuss|describe)|"
    r"what (?:did|does|do) (?:the|this|its|their) (?:\w+ )?(?:study|studies|survey|evaluation|experiments?|analysis|"
    r"authors?) .{0,60}?(?:find|show|report|conclude)|"
    r"(?:describe|discuss|report|say)s? .{0,30}?\b(?:in|about) (?:this|the) (?:\w+ )?(?:paper|report|filing|document|"
    r"study)|"
    r",\s+and\s+(?:what|which|how|why)\s+(?!other\b)\w+(?:['’]\w+)?\s+\w+|"
    r"explain (?:the|this) (?:paper|method|approach|section)|"
    r"describe (?:the|this) (?:paper|method|approach|section))\b",
    re.IGNORECASE)
_BROAD_ZH = re.compile(r"总结|概括|概述|摘要|主要(?:内容|贡献|观点|思想|问题|方法|结论|发现)|讲了什么|讲的是什么|"
                       r"解决了?什么问题|有什么区别|有何区别|区别是什么|有什么不同|比较|对比|介绍一下|简述|"
                       r"(?:有|存在)(?:哪些|什么)(?:局限|不足)|局限性|不足之处|主要有哪些|有哪些主要|哪些主要|"
                       r"(?:如何|怎么|怎样)应对|一步步|哪些步骤|步骤是什么|流程是")
# Families of phrasing that ask for an account rather than a fact, each checked against the factoid sets'
# 25,242 questions (SQuAD 2.0 train subset, SQuAD v1.1 dev, CJRC dev, CMRC2018 dev, ACE-whQA), where together
# they match three ("What does the plos pathogen paper claim?"):
_ASKS_FOR_AN_ACCOUNT = (
    # a request opening the question or a sentence of it ("Explain ...", "Can you walk me through ...")
    re.compile(r"(?:^|[.?!]\s+)(?:please\s+|(?:can|could|would) you\s+(?:please\s+)?)?(?:explain|describe|"
               r"walk (?:me|us) through|tell (?:me|us) about|go (?:over|through)|break down|give (?:me |us )?"
               r"(?:an? |the )?(?:overview|rundown|summary|sense|idea|picture))\b", re.IGNORECASE),
    re.compile(r"\bwhat(?:'s| is| are| was| were) the (?:gist|takeaways?|upshot|bottom line|big picture)\b",
               re.IGNORECASE),
    # what a document or its parts say ("What does Uber's 10-Q say about its liquidity?")
    re.compile(r"\bwhat (?:does|do|did) (?:[^?]{0,60}?\s)?(?:paper|report|filing|10-[qk]|study|studies|survey|"
               r"article|document|book|chapter|section|authors?|results|experiments?|evaluation|analysis|manual|"
               r"guide|case|regulation|contract|agreement|policy|statement)'?s? (?:say|show|find|report|reveal|"
               r"conclude|suggest|argue|claim|recommend|propose|discuss|cover|describe|explain|note|mention)\b",
               re.IGNORECASE),
    # a second question joined on ("..., and does it think it has enough cash?")
    re.compile(r",\s*and\s+(?:does|do|did|is|are|was|were|can|could|will|would|should|has|have)\s+"
               r"(?:it|they|the|this|its|their|he|she|we|you)\b", re.IGNORECASE),
    # a question followed by what the reader wants from it ("... show? I'm interested both in ...")
    re.compile(r"[?？]\s*(?:i'?m|i am|i'?d|i would|i want|please|especially|in particular|focus)\b", re.IGNORECASE),
    # 整理/梳理 a part, 讲讲/说一下 it, 帮我概括; plans (有什么打算, 未来的方向, 工作目标); how something is built
    re.compile(r"整理一下|请整理|帮我整理|梳理|归纳一下|讲讲|说说|谈谈|讲一下|说一下|解释一下|都讲|"
               r"帮我(?:概括|总结|讲|说|解释|分析|理|捋)"),
    re.compile(r"(?:有什么|有何)打算|打算(?:怎么|如何)|未来.{0,6}(?:方向|计划|规划)|(?:工作|经营|发展)(?:计划|目标|规划)"),
    re.compile(r"(?:怎么|怎样|如何)(?:实现|搭建|构建)|是(?:怎么|怎样|如何)(?:运作|工作)的"),
)
_SECTION_NUMBER = re.compile(r"\b(?:section|chapter|part|§)\s*(\d+(?:\.\d+)*)\b|"
                             r"第\s*([0-9]+|[一二三四五六七八九十]+)\s*[章节部分篇]", re.IGNORECASE)
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
_QUESTION_MARK = re.compile(r"[?？]")
_QUOTED_TITLE = re.compile(r"《[^》]*》|“[^”]*”|\"[^\"]*\"")
_CHINESE_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")}
_WORD = re.compile(r"\w", re.UNICODE)


@dataclass(frozen=True)
class SectionName:
    """A section a question names: by its number ("3.2", "第三章" -> "3") or by its title."""

    number: str | None = None
    title: str | None = None


def plain_question(question: str) -> str:
    """The question in simplified script, as the patterns above are written."""
    return to_simplified(question or "")


def is_broad(question: str) -> bool:
    """True for a question whose answer is spread over passages (summaries, overviews, comparisons)."""
    text = plain_question(question)
    if not text:
        return False
    # a section named by number is asked about as a whole; one named by title only when the question is broad
    # ("Where is the coldest section of Victoria?" is a factoid)
    return bool(_BROAD_EN.search(text) or _BROAD_ZH.search(text) or _SECTION_NUMBER.search(text)
                or any(pattern.search(text) for pattern in _ASKS_FOR_AN_ACCOUNT) or _asks_two_things(text))


def _asks_two_things(text: str) -> bool:
    """Two questions in one ("…是什么？主要有哪些…？"): the answer spans passages, not one sentence."""
    text = _QUOTED_TITLE.sub("", text)  # a "?" inside a quoted title is not a question
    marks = _QUESTION_MARK.findall(text)
    return len(marks) >= 2 and sum(len(part.strip()) >= 4 for part in _QUESTION_MARK.split(text)) >= 2


def named_section(question: str) -> SectionName | None:
    """The section a question names ("Summarise section 3" -> number "3"; "the Related Work section" -> title)."""
    text = plain_question(question)
    match = _SECTION_NUMBER.search(text)
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

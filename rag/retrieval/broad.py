"""Broad questions: summaries, "what problem does this paper address and how", comparisons.

The factoid machinery (sentence-level evidence, the answerability gate's question coverage) assumes one
sentence holds the answer. A broad question's answer is spread over the abstract, the introduction or a
section, so it gets whole passages, the document's opening passages and the passages of a named section
(``rag.retrieval.postprocessors.broad``), a larger budget, and no factoid gate; its claims are still verified.
"""

from __future__ import annotations

import re

_BROAD_EN = re.compile(
    r"\b(?:summari[sz]e|summary|overview|outline|main (?:idea|point|contribution|finding|result)s?|"
    r"key (?:idea|point|contribution|finding|takeaway)s?|what (?:problem|issue|question)s? (?:does|do|did|is|are)|"
    r"what is (?:this|the) (?:paper|document|report|article|chapter|section) about|"
    r"how (?:does|do|did) (?:the|this|their|its) (?:method|approach|system|model|framework|paper) work|"
    r"(?:how|in what ways?) (?:do|does|did) .{1,60}? differ|difference between|compare|comparison|"
    r"explain (?:the|this) (?:paper|method|approach|section)|describe (?:the|this) (?:paper|method|approach|section))\b",
    re.IGNORECASE)
_BROAD_ZH = re.compile(r"总结|概括|概述|摘要|主要(?:内容|贡献|观点|思想|问题|方法|结论)|讲了什么|讲的是什么|"
                       r"解决了?什么问题|有什么区别|有何区别|区别是什么|比较|对比|介绍一下|简述")
_SECTION = re.compile(r"\b(?:section|chapter|part)\s+(\d+(?:\.\d+)*)\b|第\s*([0-9一二三四五六七八九十]+)\s*[章节部分]",
                      re.IGNORECASE)


def is_broad(question: str) -> bool:
    """True for a question whose answer is spread over passages (summaries, overviews, comparisons)."""
    return bool(question) and bool(_BROAD_EN.search(question) or _BROAD_ZH.search(question)
                                   or _SECTION.search(question))


def named_section(question: str) -> str | None:
    """The section number a question names ("Summarise section 3" -> "3"), if any."""
    match = _SECTION.search(question or "")
    if not match:
        return None
    return match.group(1) or match.group(2)

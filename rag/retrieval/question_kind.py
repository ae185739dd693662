"""What kind of question this is: a broad one (a summary, an overview, a comparison, an account of how something
works) or a factoid one (one value, stated in one sentence or one table cell).

The factoid machinery (sentence-level evidence, the answerability gate, the answer's confidence check) assumes
one sentence holds the answer; a broad question gets whole passages and a larger budget instead
(``rag.retrieval.broad``). Questions are read in simplified script, so traditional Chinese (總結, 有什麼區別) is
recognised too.
"""

from __future__ import annotations

import re

from rag.text.script import to_simplified

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
SECTION_NUMBER = re.compile(r"\b(?:section|chapter|part|§)\s*(\d+(?:\.\d+)*)\b|"
                             r"第\s*([0-9]+|[一二三四五六七八九十]+)\s*[章节部分篇]", re.IGNORECASE)
_QUESTION_MARK = re.compile(r"[?？]")
_QUOTED_TITLE = re.compile(r"《[^》]*》|“[^”]*”|\"[^\"]*\"")


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
    return bool(_BROAD_EN.search(text) or _BROAD_ZH.search(text) or SECTION_NUMBER.search(text)
                or any(pattern.search(text) for pattern in _ASKS_FOR_AN_ACCOUNT) or _asks_two_things(text))


def _asks_two_things(text: str) -> bool:
    """Two questions in one ("…是什么？主要有哪些…？"): the answer spans passages, not one sentence."""
    text = _QUOTED_TITLE.sub("", text)  # a "?" inside a quoted title is not a question
    marks = _QUESTION_MARK.findall(text)
    return len(marks) >= 2 and sum(len(part.strip()) >= 4 for part in _QUESTION_MARK.split(text)) >= 2

"""What kind of question this is: a broad one (a summary, an overview, a comparison, an account of how something
works) or a factoid one (one value, stated in one sentence or one table cell).

The factoid machinery (sentence-level evidence, the answerability gate, the answer's confidence check) assumes
one sentence holds the answer; a broad question gets whole passages and a larger budget instead
(``rag.retrieval.broad``). Questions are read in simplified script, so traditional Chinese (總結, 有什麼區別) is
recognised too.
"""

from __future__ import annotations

import re

from rag.text.language import detect_language
from rag.text.script import to_simplified

_BROAD_EN = re.compile(
    r"\b(?:summari[sz]e|summary|overview|outline|main (?:idea|point|contribution|finding|result)s?|"
    r"key (?:idea|point|contribution|finding|takeaway|result|risk)s?|"
    r"what (?:problem|issue|question)s? (?:does|do|did|is|are)|"
    r"what is (?:this|the) (?:paper|document|report|article|book|chapter|section) about|"
    r"how (?:does|do|did) (?:the|this|their|its) (?:method|approach|system|model|framework|paper) work|"
    r"(?:how|in what ways?) (?:do|does|did) .{1,120}? differ|difference between|compare|comparison|"
    r"how (?:is|are|was|were) .{1,120}? different\b|what(?:'s| is| are) the (?:main |key |real )?differences?\b|"
    r",\s*and why\b|"
    r"(?:what|which) (?:are |were )?(?:the |its |their |some )?(?:main |key )?(?:limitations|weaknesses|shortcomings)|"
    r"what does (?:the |this )?.{1,60}? (?:section|chapter) (?:say|cover|discuss|describe)|"
    r"what (?:did|does|do) (?:the|this|its|their) (?:\w+ )?(?:study|studies|survey|evaluation|experiments?|analysis|"
    r"authors?) .{0,60}?(?:find|show|report|conclude)|"
    r"(?:describe|discuss|report|say)s? .{0,30}?\b(?:in|about) (?:this|the) (?:\w+ )?(?:paper|report|filing|document|"
    r"study)|"
    r",\s+and\s+(?:what|which|how|why)\s+(?!other\b)[\w-]+(?:['’]\w+)?\s+[\w-]+|"
    r"explain (?:the|this) (?:paper|method|approach|section)|"
    r"describe (?:the|this) (?:paper|method|approach|section))\b",
    re.IGNORECASE)
_BROAD_ZH = re.compile(r"总结|概括|概述|摘要|主要(?:内容|贡献|观点|思想|问题|方法|结论|发现)|讲了什么|讲的是什么|"
                       r"解决了?什么问题|有什么区别|有何区别|区别是什么|有什么不同|比较|对比|介绍一下|简述|"
                       r"(?:有|存在)(?:哪些|什么)(?:局限|不足)|局限性|不足之处|主要有哪些|有哪些主要|哪些主要|"
                       r"(?:如何|怎么|怎样)应对|一步步|哪些步骤|步骤是什么|流程是|有什么不一样|有啥不一样|差在哪|"
                       r"(?:怎么|如何|怎样)推(?:出|导)|推导过程")
# Families of phrasing that ask for an account rather than a fact, each checked against the factoid sets'
# 25,242 questions (SQuAD 2.0 train subset, SQuAD v1.1 dev, CJRC dev, CMRC2018 dev, ACE-whQA), where together
# they match three ("What does the plos pathogen paper claim?"):
_ASKS_FOR_AN_ACCOUNT = (
    # a request opening the question or a sentence of it ("Explain ...", "Can you walk me through ...")
    re.compile(r"(?:^|[.?!]\s+)(?:please\s+|(?:can|could|would) you\s+(?:please\s+)?)?(?:explain|describe|list|"
               r"walk (?:me|us) through|tell (?:me|us) about|go (?:over|through)|break down|give (?:me |us )?"
               r"(?:an? |the )?(?:overview|rundown|summary|sense|idea|picture))\b", re.IGNORECASE),
    re.compile(r"\bwhat(?:'s| is| are| was| were) the (?:gist|takeaways?|upshot|bottom line|big picture)\b",
               re.IGNORECASE),
    # what a document or its parts say ("What does Uber's 10-Q say about its liquidity?")
    re.compile(r"\bwhat (?:does|do|did) (?:[^?]{0,60}?\s)?(?:paper|report|filing|10-[qk]|study|studies|survey|"
               r"article|document|book|chapter|section|authors?|results|experiments?|evaluation|analysis|manual|"
               r"guide|case|regulation|contract|agreement|policy|statement|team)'?s? (?:say|show|find|report|reveal|"
               r"conclude|suggest|argue|claim|recommend|propose|discuss|cover|describe|explain|note|mention|learn)\b|"
               r"\bwhat (?:does|do|did) [^?]{1,60}? (?:disclose|detail) about\b",
               re.IGNORECASE),
    # what the people a study asked said of it ("What did participants in the field study say about ...?")
    re.compile(r"\bwhat (?:did|do|does) (?:the )?(?:participants|users|interviewees|respondents|readers|reviewers)\b"
               r"[^?]{0,80}?\b(?:say|think|feel|report|prefer|like|dislike|find|mention|suggest)\b", re.IGNORECASE),
    # how a thing is made to work ("How is ChatGPT prompted to rewrite queries?")
    re.compile(r"\bhow (?:is|are|was|were) [^?]{1,80}? (?:prompted|trained|built|designed|implemented|constructed|"
               r"organi[sz]ed|structured)\b", re.IGNORECASE),
    # how a thing is shown, placed or handled ("How does the report place its models against GPT-3 ...?")
    re.compile(r"\bhow (?:does|do|did) (?:the|this|its|their) [^?]{1,80}?\b(?:show|illustrate|demonstrate|place|"
               r"position|rank|stack up|measure up|accommodate|handle|deal with)\b", re.IGNORECASE),
    # a second question joined on ("..., and does it think it has enough cash?")
    re.compile(r",\s*and\s+(?:does|do|did|is|are|was|were|can|could|will|would|should|has|have)\s+"
               r"(?:it|they|the|this|that|its|their|he|she|we|you)\b", re.IGNORECASE),
    # a question followed by what the reader wants from it ("... show? I'm interested both in ...")
    re.compile(r"[?？]\s*(?:i'?m|i am|i'?d|i would|i want|i mean|please|especially|in particular|focus)\b",
               re.IGNORECASE),
    # 整理/梳理 a part, 讲讲/说一下 it, 帮我概括; plans (有什么打算, 未来的方向, 工作目标); how something is built
    re.compile(r"整理一下|请整理|帮我整理|梳理|归纳一下|讲讲|说说|谈谈|讲一下|说一下|解释一下|都讲|"
               r"帮我(?:概括|总结|讲|说|解释|分析|理|捋)|想了解|请说明|请解释|说明一下"),
    re.compile(r"(?:有什么|有何)打算|打算(?:怎么|如何)|未来.{0,6}(?:方向|计划|规划)|(?:工作|经营|发展)(?:计划|目标|规划)"),
    re.compile(r"(?:怎么|怎样|如何)(?:实现|搭建|构建)|是(?:怎么|怎样|如何)(?:运作|工作)的"),
)
SECTION_NUMBER = re.compile(r"\b(?:section|chapter|part|§)\s*(\d+(?:\.\d+)*)\b|"
                             r"第\s*([0-9]+|[一二三四五六七八九十]+)\s*[章节部分篇]", re.IGNORECASE)
_QUESTION_MARK = re.compile(r"[?？]")
# One value asked for, where a place in the document is named first ("In S2ORC's comparison of corpora, how many
# papers ...?", "In the summary table, what default is given for \LTcapwidth?", "在编辑器对比表中，WinEdt 要花多少钱？"):
# the words that name the place (comparison, summary, section 3.6, 对比表) say nothing of what is asked.
_CLAUSE_WH = re.compile(r"(?:^|[,:;]\s*)((?:what|which|how|who|whom|whose|when|in which|in what)\b.*)$",
                        re.IGNORECASE | re.DOTALL)
_ONE_VALUE_EN = re.compile(
    r"^(?:how (?:many|much|long|old|often|far|large|big|tall|high)\b|(?:who|whom|whose|when)\b|"
    r"(?:in )?(?:what|which) (?:(?!(?:does|do|did|has|have)\b)[\w.'’-]+ ){0,5}?(?:year|date|day|month|time|age|"
    r"percent|percentage|share|proportion|number|amount|score|value|default|figure|rate|price|cost|size|"
    r"coefficient|estimate|total|entry|name|language|letter|symbol|command|option|function|package|section|page|error|aic|bic)s?\b"
    r"(?! (?:and|or)\b)|"
    r"what (?:does|do|did) [^?,]{1,60}? (?:specify|stand for|denote|mean)\b|"
    r"what [\w.'’-]+ (?:does|do|did) [^?,]{1,60}? (?:score|get|achieve|reach|obtain)\b)", re.IGNORECASE)
_ONE_VALUE_ZH = re.compile(r"多少|几(?:个|所|年|次|位|种|项|家|名|天|月|岁|倍|条|篇|章|人)|哪一?年|何时|什么时候|是谁|"
                           r"含义是什么|用什么(?:字母|符号|命令|标志|单位|颜色)")
_MORE_THAN_A_VALUE_ZH = re.compile(r"哪些|怎么|怎样|如何|为什么|为何|总结|概括|介绍|讲讲|说明|解释|区别|不同|原因")
_SECOND_ASK = re.compile(r"[,;]\s*(?:and|or|but)?\s*(?:what|which|how|why|who|when|where|is|are|was|were|does|do|"
                         r"did|can)\b|\band (?:why|how|what|which|where|when|who)\b", re.IGNORECASE)
_QUOTED_TITLE = re.compile(r"《[^》]*》|“[^”]*”|\"[^\"]*\"")


def plain_question(question: str) -> str:
    """The question in simplified script, as the patterns above are written."""
    return to_simplified(question or "")


def is_broad(question: str) -> bool:
    """True for a question whose answer is spread over passages (summaries, overviews, comparisons)."""
    text = plain_question(question)
    if not text:
        return False
    if _asks_for_one_value(text):
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


def asks_for_one_value(question: str) -> bool:
    """True for a single question after one value ("how many", "what default", "多少", "哪一年"), whatever place
    in the document it names first: its comparison, summary or section words name where the value is."""
    return _asks_for_one_value(plain_question(question))


def _asks_for_one_value(text: str) -> bool:
    """``asks_for_one_value`` of a question already in simplified script (``is_broad`` converts it once)."""
    if _asks_two_things(text):
        return False
    if detect_language(text) == "zh":  # not "any non-ASCII letter": "Beyoncé", "S2ORC’s" are English
        asked = re.split(r"[，,：:]", text)[-1]
        return bool(_ONE_VALUE_ZH.search(asked)) and not _MORE_THAN_A_VALUE_ZH.search(asked)
    clause = _CLAUSE_WH.search(text)
    if clause is None:
        return False
    asked = clause.group(1)
    return bool(_ONE_VALUE_EN.match(asked)) and not _SECOND_ASK.search(asked)

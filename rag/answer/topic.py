"""Whether the sources given for a broad question are about what it asks: the check that answers "not found" to a
summary, overview or comparison, so that the model is never asked to judge it.

Under the broad answer rules the 1.5B model replied "not found" to broad questions with the right pages in front
of it (docs/answering.md, "Broad questions"), and the factoid gate was never fitted for them. What a broad question
asks about is named by its rare words once the words that only frame a request are set aside ("summarise",
"paper", 概括, 哪些): a library that holds none of "copyright", "licensing" or "redistribution" cannot summarise
how a corpus was licensed, however much it says about the corpus. So the check is the IDF-weighted share of the
question's topic words that the sources hold between them, and it needs no model call.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import jieba.posseg
from llama_index.core.base.llms.types import ChatMessage

from rag.answer.gate import Gate, Verdict, broad_gate_for, check_messages, yes_probability
from rag.answer.llm_runner import RequestLLM
from rag.answer.types import Source
from rag.prompts import BROAD_CHECK_LINE
from rag.retrieval.broad import frame_tokens
from rag.retrieval.evidence import IdfLookup, question_terms
from rag.text.tokenizer import tokenize

_WORDS = re.compile(r"[\w'’-]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_APOSTROPHE = re.compile(r"['’]")


@dataclass(frozen=True)
class TopicShare:
    """How much of what a broad question asks about the sources name.

    Args:
        share: IDF-weighted share of the question's topic words found in the sources' text (0..1); None when the
            question has no topic words beyond its frame (then there is nothing to check).
        missing: The topic words no source holds, rarest first.
    """

    share: float | None
    missing: list[str]


# Beyond the broad frame (rag.retrieval.broad: "summarise", "paper", 概括 ...): how a reader phrases a request to a
# person ("Can you walk me through ...", "I'd like to know the gist", 帮我整理一下, 大概讲讲), the names of a
# document's parts, which a source need not repeat ("Section 5.2", 年报里, 第4章中这一节), and the Chinese question
# and pointing words that jieba keeps whole (哪几种, 怎么回事, 有没有, 一步步, 那一块), which, like "which", "that" or
# "think", ask about a topic without naming it.
_REQUEST_WORDS = (
    "i me my mine myself you your yours we us our he she him her his its be been being have has had having am get "
    "gets got make makes made like want wants wanted know knows think thinks tell walk through go going over break "
    "down gist rundown takeaway takeaways interested interest curious actually really basically just also still even "
    "so very much more most some any all each both either other another same own one thing things way ways kind sort "
    "part parts section sections chapter chapters page pages end ends first last later "
    "我 我们 你 你们 他们 它 它们 帮 帮我 想 想要 知道 了解 讲讲 说说 说一下 讲一下 整理 梳理 一下 大概 大致 具体 分别 "
    "各自 各 又 还 都 就 再 跟 里 中 后来 到底 打算 年报 年度报告 章 节 一节 章节 部分 最后 后面 "
    "哪几 哪几种 哪几个 哪些方面 哪方面 哪一些 怎么回事 回事 有没有 是不是 一步步 步步 那个 那些 这些 一块 那一块 觉得"
)


# English closed-class words, listed by grammatical class as the Chinese ones below are found by tag: modal and
# auxiliary verbs, prepositions, conjunctions, determiners and quantifiers, pronouns, adverbs of time, place, degree
# and linking, and small numerals ("Where should this work head next?" asks about future work, not about "should"
# or "next"). Those the tokenizer already drops ("the", "of", "will") or the request words above list ("also", "one")
# are not repeated. "may" is not among them, being also a month.
_ENGLISH_FUNCTION_WORDS = (
    "can could might must shall should would ought do does did doing done were about above across after against "
    "along amid among amongst around before behind below beneath beside besides between beyond despite during "
    "except from inside near off onto out outside past per since than throughout till toward towards under "
    "underneath unlike until up upon via within without nor yet because although though whereas while whilst unless "
    "whether once those every few many several none neither enough less least them theirs themselves itself "
    "ourselves yourself someone something anyone anything everyone everything nobody nothing somebody anybody "
    "everybody who whom whose which what whatever whichever whoever again already always almost ever never often "
    "sometimes usually here where when why how now soon earlier next too quite rather somewhat fairly pretty only "
    "else otherwise instead however therefore thus hence anyway away back far further furthermore moreover "
    "meanwhile perhaps maybe probably two three four five six seven eight nine ten"
)


# Each new set of Chinese questions brought request words no list had (为啥, 另外, 有些, 之类, 几项, 跟前), so a list
# cannot be the whole answer. jieba's dictionary tags such words as pronouns (r), conjunctions (c), adverbs (d),
# numerals and measure words (m, q), locatives (f), prepositions (p), particles (u), modal particles (y),
# interjections (e) and onomatopoeia (o); what a question asks about is a noun, verb, adjective or name.
_FUNCTION_CLASSES = frozenset("rcdmqfpuyo")


@lru_cache(maxsize=1)
def _not_topic() -> frozenset[str]:
    return frame_tokens() | frozenset(tokenize(_REQUEST_WORDS)) | frozenset(tokenize(_ENGLISH_FUNCTION_WORDS))


@lru_cache(maxsize=4096)
def _chinese_function_word(term: str) -> bool:
    """Whether every part jieba's tagger cuts ``term`` into is a function class (``_FUNCTION_CLASSES``)."""
    pieces = jieba.posseg.lcut(term)
    # "e" whole, not as a first letter: jieba tags a Latin-script word "eng"
    return bool(pieces) and all(piece.flag == "e" or piece.flag[:1] in _FUNCTION_CLASSES for piece in pieces)


def topic_terms(question: str, idf: IdfLookup | None) -> dict[str, float]:
    """The question's search terms without the words that frame a request, with their IDF weights.

    Also left out: contractions ("i'd", "isn't"), single Chinese characters (我, 跟, 做), which are function
    words far more often than topics, and Chinese words of a function class (为啥, 另外, 几项).
    """
    skip = _not_topic()
    return {term: weight for term, weight in question_terms(question, idf).items()
            if term not in skip and not _APOSTROPHE.search(term)
            and not (_CJK.match(term) and (len(term) == 1 or _chinese_function_word(term)))}


def topic_share(question: str, sources: Sequence[Source], idf: IdfLookup | None) -> TopicShare:
    """The share of the question's topic words that the sources hold between them, and those they lack."""
    weights = topic_terms(question, idf)
    total = sum(weights.values())
    if not weights or total <= 0:
        return TopicShare(None, [])
    present: set[str] = set()
    for source in sources:
        present.update(tokenize(source.text))
    missing = sorted((term for term in weights if term not in present), key=lambda term: -weights[term])
    return TopicShare(round(sum(w for term, w in weights.items() if term in present) / total, 4), missing)


def check_broad(request: RequestLLM, messages: list[ChatMessage] | None, sources: Sequence[Source], question: str,
                settings: Any, idf: IdfLookup | None) -> Verdict:
    """The verdict for a broad question: the bundled model's calibrated gate also asks the model, on the answer
    prompt (whose KV cache the answer then reuses), whether the sources speak to the question; any other model is
    judged by the topic share alone."""
    started = time.perf_counter()
    topic = topic_share(question, sources, idf)
    gate = broad_gate_for(request.llm, settings)
    p_yes = None
    if gate is not None and messages is not None:
        probe = check_messages(messages, BROAD_CHECK_LINE)
        outcome = request.call("answerability check", lambda llm: yes_probability(llm, probe))
        p_yes = outcome[0] if outcome is not None else None
    verdict = topic_verdict(topic, settings.broad_topic_min, question, p_yes=p_yes, gate=gate)
    verdict.ms = round((time.perf_counter() - started) * 1000, 1)
    return verdict


def topic_verdict(topic: TopicShare, minimum: float, question: str, *, p_yes: float | None = None,
                  gate: Gate | None = None) -> Verdict:
    """The verdict for a broad question: with a calibrated ``gate`` and the model's ``p_yes``, the gate's line over
    (P(yes), topic share); otherwise answer unless the sources hold under ``minimum`` of its topic words.

    A question with no topic words beyond its frame counts as fully covered; an unknown P(yes) falls back to the
    topic share alone.
    """
    share = 1.0 if topic.share is None else topic.share
    if gate is not None and p_yes is not None:
        rule = f"{gate.w_yes:.2f}*P(yes) + {gate.w_coverage:.2f}*topic share {gate.bias:+.2f} >= 0"
        score, method = gate.score(p_yes, share), "topic+P(yes)"
        shown = f"P(yes)={p_yes:.2f}, topic share={share:.2f}"
    else:
        rule = f"topic share >= {minimum:g}"
        score, method = share - minimum, "topic"
        shown = f"topic share={share:.2f}"
    p_yes = None if p_yes is None else round(p_yes, 4)
    if score >= 0:
        return Verdict(True, p_yes, topic.share, round(score, 4), rule, None, method, shown)
    words = ", ".join(asked_words(question, topic.missing)[:5])
    lacking = f"; none mentions {words}" if words else ""
    return Verdict(False, p_yes, topic.share, round(score, 4), rule, None, method,
                   f"the sources are unlikely to be about what the question asks ({shown}: {rule} fails{lacking})")


def asked_words(question: str, tokens: Sequence[str]) -> list[str]:
    """The question's own words behind search tokens (a stem such as "licens" shown as "licensing")."""
    wanted = set(tokens)
    words: list[str] = []
    for word in _WORDS.findall(question):
        found = [token for token in tokenize(word) if token in wanted]
        # a Chinese "word" here is a whole clause: its missing jieba words are shown, not the clause
        words.extend(found if _CJK.search(word) else [word] if found else [])
    return list(dict.fromkeys(words)) or list(tokens)

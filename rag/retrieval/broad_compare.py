"""Comparisons among broad questions: the two things a question compares, and where a document defines each.

"How do RAPT and NC-RAPT differ?" needs the passages that say what RAPT and NC-RAPT are, which retrieval for
the question's words rarely ranks together (``rag.retrieval.postprocessors.broad``).
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Sequence

from rag.retrieval.broad import heading_parts
from rag.retrieval.question_kind import plain_question

# The two things a comparison names: "How do RAPT and NC-RAPT differ?", "the difference between A and B",
# "compare A with B", "A vs B", "A和B有什么区别", "比较A与B".
# A compared thing never runs past the end of a sentence ("… already knows? Please summarize … parametric versus
# retrieved knowledge" compares parametric and retrieved knowledge, not the sentence before).
_THING = r"[^?!。？！]"
_COMPARED = (
    re.compile(rf"(?:how|in what ways?) (?:do|does|did|is|are) ({_THING}{{2,80}}?) (?:and|from) ({_THING}{{2,80}}?) "
               r"differ", re.IGNORECASE),
    re.compile(rf"(?:how|in what ways?) (?:do|does|did|is|are) ({_THING}{{2,80}}?) differs? from ({_THING}{{2,80}}?)"
               r"(?:[?!.,;]|$)", re.IGNORECASE),
    re.compile(rf"differen(?:ce|ces|t) between ({_THING}{{2,80}}?) and ({_THING}{{2,80}}?)(?:[?!.,;]|$)",
               re.IGNORECASE),
    re.compile(r"compare (?!with\b|to\b|against\b)([^,;?!]{2,80}?) (?:with|to|and|against) ([^,;?!]{2,80}?)"
               r"(?:[?!.,;]|$)", re.IGNORECASE),
    re.compile(r"(?:比较|对比)?([^，。？?、\s]{2,20}?)(?:和|与|跟|同)([^，。？?、\s]{2,20}?)(?:之间)?(?:有什么|有何|有啥|的)?"
               r"(?:区别|不同|差异|异同)"),
    re.compile(r"(?:比较|对比)(?:一下)?([^，。？?、\s]{2,20}?)(?:和|与|跟|同)([^，。？?、\s]{2,20})"),
)
# "A versus B" marks its things by nothing but the words around it: each is the phrase next to "versus", cut at the
# first word that starts or ends a phrase ("summarize the analysis of parametric versus retrieved knowledge in QA"
# compares parametric and retrieved knowledge).
_VERSUS = re.compile(r"\s(?:vs\.?|versus)\s", re.IGNORECASE)
_PHRASE_BREAKS = frozenset(
    "of on about between for in with from to by at as than when where which that who how what why whether is are was "
    "were be do does did please compare comparing summarize summarise explain describe discuss and or but".split())
_MAX_PHRASE_WORDS = 4
# An English article or pointer is a whole word ("another method" keeps its "a", "theory" its "the").
_LEADING_FILLER = re.compile(r"^(?:(?:the|a|an|this|these)\s+|请|这两种|两种|这两个)", re.IGNORECASE)
# "Which prior systems do they compare it with?" compares one thing with others it does not name: no two things to
# look up, so the question keeps retrieval's passages.
_POINTERS = frozenset("it its they them this that these those one ones 它 它们 这 那 这个 那个".split())


def compared_terms(question: str) -> list[str]:
    """The two things a comparison question names, as written (simplified script), or [] for other questions."""
    text = plain_question(question).strip()
    readings = (match.groups() for pattern in _COMPARED if (match := pattern.search(text)))
    for found in (*readings, _versus_terms(text)):
        terms = [_LEADING_FILLER.sub("", term.strip(" \"'“”‘’「」《》")) for term in found]
        if len(terms) == 2 and all(len(term) >= 2 and term.lower() not in _POINTERS for term in terms):
            return terms
    return []


def _versus_terms(text: str) -> tuple[str, ...]:
    """The phrases on either side of "versus" (or "vs"), within its sentence; () when there is none."""
    match = _VERSUS.search(text)
    if match is None:
        return ()
    before = re.split(r"[?!.;:,。？！；：，]\s*", text[:match.start()])[-1].split()
    after = re.split(r"[?!.;:,。？！；：，]", text[match.end():], maxsplit=1)[0].split()
    return " ".join(reversed(_phrase(reversed(before)))), " ".join(_phrase(after))


def _phrase(words: Iterable[str]) -> list[str]:
    """The leading words of ``words`` up to a phrase break, at most ``_MAX_PHRASE_WORDS``."""
    phrase: list[str] = []
    for word in words:
        if word.lower() in _PHRASE_BREAKS or len(phrase) == _MAX_PHRASE_WORDS:
            break
        phrase.append(word)
    return phrase


def first_mentions(chunks: Sequence, terms: Sequence[str], skip: Callable[[str], bool] = lambda text: False) -> list:
    """For each term, where the document defines it: the first chunk under a heading that names it, else the first
    chunk in document order that names it.

    A book names a method in passing long before the section about it (the pumpkin book names GBDT in its AdaBoost
    pages), so a heading that names the term outranks an earlier mention in the text.
    """
    readable = [(chunk, plain_question(str(getattr(chunk, "text", ""))).lower(),
                 plain_question(" ".join(heading_parts(chunk))).lower()) for chunk in chunks]
    found = []
    for term in terms:
        wanted = plain_question(term).lower()
        under_heading = (chunk for chunk, _, path in readable if _names(path, wanted))
        in_text = (chunk for chunk, text, _ in readable
                   if wanted in text and not skip(str(getattr(chunk, "text", ""))))
        chunk = next(under_heading, None) or next(in_text, None)
        if chunk is not None:
            found.append(chunk)
    return list({id(chunk): chunk for chunk in found}.values())


def _names(text: str, term: str) -> bool:
    """``term`` in ``text`` as a whole word ("RAPT" is not named by "NC-RAPT"'s heading); Chinese as a substring."""
    if not term:
        return False
    if not term.isascii():
        return term in text
    return re.search(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", text) is not None

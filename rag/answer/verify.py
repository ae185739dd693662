"""Claim verification: every claim of an answer is checked against the source it cites before it is shown.

A claim is an answer sentence with its ``[n]`` markers (a sentence without markers is matched to a
source by overlap, as citations are). Checks, cheapest first; the first that fails decides:

1. **Specific content** (no model): every number, date and name in the claim, and some of the words the
   claim adds beyond the question (the answer itself), must appear in the cited source's text as the
   model saw it. "born in 1912 [2]" fails when source 2 never says 1912.
2. **Question anchor** (no model): the cited source must also hold the question's rare words
   (IDF-weighted share >= ``anchor_min``). A source about another person, film or year can state the
   claim's year and still not answer *this* question: that is how a plausible distractor gets cited.
3. **Targeted yes/no** (the answering LLM, optional): the cited source's best sentences, the question
   and the claim; P(yes) from the first token's logits must reach ``threshold``.

Broad questions (summaries, comparisons) skip the anchor check: their claims paraphrase several passages.
The result says, per claim, which source was checked, against which quote, and why it failed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.answer.citations import (CitedSentence, answer_pieces, best_quote, infer_source, strip_markers,
                                  with_marker)
from rag.answer.gate import yes_probability
from rag.answer.types import Source
from rag.prompts import (VERIFY_ASK, VERIFY_ASK_BROAD, VERIFY_PROMPT, answer_system_prompt, as_quoted_data,
                         format_sources)
from rag.retrieval.evidence import question_terms
from rag.retrieval.question_kind import is_broad
from rag.text.language import detect_language
from rag.text.overlap import content_tokens
from rag.text.tokenizer import tokenize

logger = logging.getLogger(__name__)

IdfLookup = Callable[[Iterable[str]], dict[str, float]]

# The share of a claim's words another source must hold before the claim is re-cited to it: the bar that matches an
# uncited sentence to its source (rag.answer.citations.infer_source, as the stream calls it).
RECITE_OVERLAP = 0.4
RECITE_MIN_WORDS = 3
# How much of an answer with no claim the verification record repeats (it may be a loop of hundreds of tokens).
UNCITED_TEXT_CHARS = 200
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z'’\-]+")
_QUOTED = re.compile(r"[\"“「『]([^\"”」』]{2,60})[\"”」』]")
# the model naming a source in words ("as stated in <<<SOURCE 1>>>", "Source 2") is a citation, not content
_SOURCE_REFERENCE = re.compile(r"<<<[^<>]{0,80}>>>|\b(?:source|来源)\s*\d{1,2}\b", re.IGNORECASE)


@dataclass
class ClaimCheck:
    """The verdict on one claim.

    Args:
        sentence: The claim (markers removed).
        source: The source number it was checked against (None when it cites none).
        supported: True when every check passed.
        reason: Why it failed, in words ("" when supported).
        check: "content", "anchor", "llm", "uncited" or "" (which check decided); "recited" for a claim its cited
            source does not state and another source does.
        missing: The claim's specific content (or the question's rare words) the source lacks.
        quote: The source sentences the claim was compared with.
        p_yes: The LLM's P(yes), when it was asked.
        anchor: Share of the question's rare words in the source.
        recited_from: The source numbers the claim cited, when ``source`` is another that states it.
    """

    sentence: str
    source: int | None
    supported: bool
    reason: str = ""
    check: str = ""
    missing: list[str] = field(default_factory=list)
    quote: str = ""
    p_yes: float | None = None
    anchor: float | None = None
    recited_from: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def specifics(text: str) -> list[str]:
    """Numbers, quoted strings and capitalised names in ``text`` (not the sentence's first word)."""
    found = [n.replace(",", "") for n in _NUMBER.findall(text)]
    found += [q.strip() for q in _QUOTED.findall(text)]
    found += [w for w in _NAME.findall(text.strip()) if len(w) > 1]
    return list(dict.fromkeys(found))


def content_check(claim: str, question: str, source_text: str, *, min_share: float = 0.25) -> list[str]:
    """What of the claim's specific content ``source_text`` does not state (empty when it all appears).

    Numbers, quoted strings and names must all appear. Of the other words the claim adds beyond the
    question, at least ``min_share`` must: a paraphrase ("a day" for "daily") passes, an answer made of
    words the source never uses does not.
    """
    haystack = source_text.replace(",", "")
    source_tokens = content_tokens(source_text)
    claim = _SOURCE_REFERENCE.sub(" ", claim)
    # the question's own names and numbers are not the answer: whether the source is about them is the
    # anchor check's call (a name repeated from the question failed right answers here, docs/answering.md)
    asked = {item.lower() for item in specifics(question)} | content_tokens(question)
    missing = []
    for item in specifics(claim):
        if item.lower() in asked or (not _NUMBER.fullmatch(item) and content_tokens(item) and content_tokens(item) <= asked):
            continue
        if _NUMBER.fullmatch(item):
            if not re.search(rf"(?<![\d.]){re.escape(item)}(?![\d])", haystack):
                missing.append(item)
        elif not (content_tokens(item) <= source_tokens or item.lower() in source_text.lower()):
            missing.append(item)
    added = content_tokens(claim) - content_tokens(question)
    if len(added) >= 2:
        absent = added - source_tokens
        if (len(added) - len(absent)) / len(added) < min_share:
            missing.extend(sorted(t for t in absent if t not in missing)[:5])
    return missing


def restates_question(claim: str, question: str) -> bool:
    """Whether a sentence only asks the question again: a question itself, of three words or more, all the question's.

    A statement made of the question's words ("The dose is 1200 mg." to "Is the dose 1200 mg?") confirms
    something and stays a claim; a bare "No." has no content words.
    """
    text = strip_markers(_SOURCE_REFERENCE.sub(" ", claim)).strip()
    tokens = content_tokens(text)
    return text.endswith(("?", "？")) and len(tokens) >= 3 and tokens <= content_tokens(question)


def anchor_share(question: str, source_text: str, weights: dict[str, float]) -> tuple[float | None, list[str]]:
    """IDF-weighted share of the question's terms in the source, and the missing terms, rarest first."""
    total = sum(weights.values())
    if not weights or total <= 0:
        return None, []
    present = set(tokenize(source_text))
    missing = sorted((t for t in weights if t not in present), key=lambda t: -weights[t])
    return sum(w for t, w in weights.items() if t in present) / total, missing


def verify_claims(question: str, sentences: Sequence[CitedSentence], sources: Sequence[Source], *,
                  idf: IdfLookup | None = None, llm: Any = None, threshold: float = 0.5,
                  anchor_min: float = 0.5, max_llm_claims: int = 3, broad: bool = False) -> list[ClaimCheck]:
    """One ``ClaimCheck`` per claim (sentences with a cited or matched source, or with specific content).

    Args:
        question: The (standalone) question the answer is for.
        sentences: The answer's sentences with the source numbers each cites.
        sources: The numbered sources the answer was written from (their text as the model saw it).
        idf: Term -> IDF lookup for the anchor check. Defaults to equal weights.
        llm: The LLM for the targeted yes/no check. Defaults to none (model-free checks only).
        threshold: The P(yes) a claim needs from the LLM. Defaults to 0.5.
        anchor_min: The share of the question's rare words the cited source must hold. Defaults to 0.5.
        max_llm_claims: Claims the LLM checks at most. Defaults to 3.
        broad: A broad question: skip the anchor check. Defaults to False.
    """
    by_number = {s.n: s for s in sources}
    weights = question_terms(question, idf)
    checks: list[ClaimCheck] = []
    asked = 0
    for sentence in sentences:
        if restates_question(sentence.text, question):
            continue  # "年報對當年的經營情況是怎麼說明的？[1]" cites a source but states nothing
        cited = [by_number[n] for n in sentence.numbers if n in by_number]
        if not cited:
            matched = infer_source(sentence.text, sources, min_overlap=0.4)
            if matched is None:
                if specifics(sentence.text):
                    checks.append(ClaimCheck(sentence.text, None, False, "it cites no source and no source "
                                             "matches it", "uncited", specifics(sentence.text)))
                continue
            cited = [matched]
        check = _check_one(question, sentence.text, cited, weights, anchor_min, broad)
        if broad and not check.supported and check.check in ("content", "anchor"):
            check = _recited(question, sentence.text, cited, sources, weights, anchor_min, broad) or check
        if check.supported and llm is not None and asked < max_llm_claims:
            asked += 1
            _llm_check(llm, question, check, threshold, broad)
        checks.append(check)
    if not checks and sentences:
        # nothing in the answer cites or matches a source (a model that only repeats the question, or loops on
        # a phrase): shown, it would read as an answer that no passage supports
        text = " ".join(sentence.text for sentence in sentences)
        checks.append(ClaimCheck(text[:UNCITED_TEXT_CHARS], None, False, "no sentence of the answer states more "
                                 "than the question and cites or matches a source", "uncited"))
    return checks


def _check_one(question: str, claim: str, cited: list[Source], weights: dict[str, float], anchor_min: float,
               broad: bool) -> ClaimCheck:
    """The claim against each cited source; it is supported by the first source that passes."""
    failures: list[ClaimCheck] = []
    for source in cited:
        quote = best_quote(claim, source.text)
        missing = content_check(claim, question, source.text)
        if missing:
            failures.append(ClaimCheck(claim, source.n, False, f"source [{source.n}] does not state "
                                       f"{', '.join(repr(m) for m in missing[:4])}", "content", missing, quote))
            continue
        share, absent = anchor_share(question, source.text, weights)
        if not broad and share is not None and share < anchor_min:
            failures.append(ClaimCheck(claim, source.n, False, f"source [{source.n}] is not about what the question "
                                       f"asks: it never mentions {', '.join(repr(m) for m in absent[:3])}",
                                       "anchor", absent[:5], quote, anchor=round(share, 3)))
            continue
        return ClaimCheck(claim, source.n, True, quote=quote, anchor=None if share is None else round(share, 3))
    return failures[0]


def _recited(question: str, claim: str, cited: list[Source], sources: Sequence[Source], weights: dict[str, float],
             anchor_min: float, broad: bool) -> ClaimCheck | None:
    """The claim re-cited to the one other source that shares most of its words and passes the same checks, or None.

    Only for broad questions: writing a summary from several sources, the 1.5B model copies a sentence from one and
    numbers it after another ("由于目前无法获得配套煤炭资源…[1]", copied from [2]); dropping it would hide a stated
    fact, keeping its marker would highlight the wrong passage. A factoid answer that cites a source which does not
    state it is refused as before: on the SQuAD 2.0 tuning questions the one such answer re-citing would have shown
    was to an unanswerable question (docs/answering.md, "Re-cited claims"). A claim of fewer than
    ``RECITE_MIN_WORDS`` words (a list's "2.") is not moved: any source would share them.
    """
    if len(content_tokens(claim)) < RECITE_MIN_WORDS:
        return None
    numbers = [source.n for source in cited]
    match = infer_source(claim, [source for source in sources if source.n not in numbers], min_overlap=RECITE_OVERLAP)
    if match is None:
        return None
    check = _check_one(question, claim, [match], weights, anchor_min, broad)
    if not check.supported:
        return None
    cited_text = ", ".join(f"[{n}]" for n in numbers)
    check.check, check.recited_from = "recited", numbers
    check.reason = f"cited {cited_text}, which does not state it; source [{match.n}] does"
    return check


def _llm_check(llm: Any, question: str, check: ClaimCheck, threshold: float, broad: bool) -> None:
    """Ask the LLM whether the quote states the claim as the answer; fail the claim below ``threshold``."""
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None)
    messages = verify_messages(question, check.sentence, check.quote, check.source or 1,
                               name if isinstance(name, str) else None, broad=broad)
    try:
        p_yes, _method = yes_probability(llm, messages)
    except Exception as exc:  # noqa: BLE001 - the model-free checks already passed; say the LLM could not check
        logger.warning("claim verification by the LLM failed: %s", exc)
        return
    if p_yes is None:
        return
    check.p_yes = round(p_yes, 4)
    if p_yes < threshold:
        check.supported, check.check = False, "llm"
        check.reason = (f"the model's check found that source [{check.source}] does not state this as the answer "
                        f"(P(yes) {p_yes:.2f} < {threshold:.2f})")


def verify_messages(question: str, claim: str, quote: str, n: int, model: str | None = None, *,
                    broad: bool | None = None) -> list[ChatMessage]:
    """The targeted yes/no prompt: the answer's fixed system rules (cached), then the quote, question and claim.

    ``broad`` is the question's kind as the engine read it; None reads it from the question's wording.
    """
    broad = is_broad(question) if broad is None else broad
    user = VERIFY_PROMPT.format(source=format_sources([(n, quote)]), question=" ".join(question.split()),
                                claim=as_quoted_data(" ".join(claim.split())),
                                ask=VERIFY_ASK_BROAD if broad else VERIFY_ASK)
    return [ChatMessage(role=MessageRole.SYSTEM, content=answer_system_prompt(detect_language(question), model,
                                                                            broad=broad)),
            ChatMessage(role=MessageRole.USER, content=user)]




def revise(answer: str, checks: Sequence[ClaimCheck]) -> tuple[str, bool]:
    """(the answer without its failed claims and with re-cited claims' markers changed, whether nothing verified is
    left).

    Sentences that are not claims (no source, nothing specific) stay only beside a verified claim.
    """
    failed = {c.sentence for c in checks if not c.supported}
    recited = {c.sentence: c.source for c in checks if c.supported and c.recited_from}
    if not failed and not recited:
        return answer, False
    if not any(c.supported for c in checks):
        return "", True
    for piece in answer_pieces(answer):  # in place, so an answer with nothing removed keeps its lines and lists
        claim = strip_markers(piece)
        if claim in recited:  # its markers, wherever the model put them, become the one source that states it
            answer = answer.replace(piece, with_marker(claim, recited[claim]), 1)
    if not failed:
        return answer, False
    return " ".join(piece for piece in answer_pieces(answer) if strip_markers(piece) not in failed), False


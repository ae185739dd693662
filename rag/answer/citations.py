"""Numbered sources in, ``[n]`` markers out: prompt building and citation parsing.

``sources_from_nodes`` numbers the passages the retrieval kept and ``build_answer_messages`` fences
each one as quoted data under the fixed rules of ``answer_system_prompt``. ``cited_sentences`` splits an answer into sentences with the
source numbers each one cites, and ``best_quote`` picks the passage of a source that supports a
sentence (the text the highlight is drawn on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import NodeWithScore

from rag.answer.types import Source
from rag.prompts import (
    ABSTAIN_EN,
    ABSTAIN_MARKERS,
    ABSTAIN_ZH,
    ANSWER_USER_TEMPLATE,
    LANGUAGE_LINE,
    answer_system_prompt,
    format_sources,
)
from rag.retrieval.question_kind import is_broad
from rag.text.language import detect_language
from rag.text.overlap import content_tokens, overlap
from rag.text.splitting import passage_sentences

# [1] [1, 2] [1][2] 【1】 [Source 1] — ASCII or full-width brackets and commas.
MARKER_RE = re.compile(r"[\[【]\s*(?:source\s*|来源\s*)?(\d{1,2}(?:\s*[,，、]\s*\d{1,2})*)\s*[\]】]", re.IGNORECASE)
# a sentence end plus any markers written after it ("... 1200 mg. [1]"), or a line break
_SENTENCE_END = re.compile(r"(?:[。！？]|[.!?](?=\s|$|[\[【]))(?:\s*[\[【][^\]】\n]{1,12}[\]】])*|\n+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass
class CitedSentence:
    text: str  # the sentence with its markers removed
    numbers: list[int]  # source numbers it cites, in order, without duplicates


def sources_from_nodes(nodes: Sequence[NodeWithScore]) -> list[Source]:
    """Number retrieved chunks 1..k in rank order."""
    sources = []
    for n, item in enumerate(nodes, start=1):
        meta = item.node.metadata or {}
        sources.append(Source(
            n=n, chunk_id=str(meta.get("chunk_id") or item.node.node_id), doc_id=str(meta.get("doc_id", "")),
            file_name=str(meta.get("file_name", "")), page_start=int(meta.get("page_start") or 1),
            page_end=int(meta.get("page_end") or meta.get("page_start") or 1), text=item.node.get_content(),
            score=None if item.score is None else float(item.score),
            **_folded_span(meta)))
    return sources


def _folded_span(meta: dict) -> dict[str, int]:
    """A folded table's offsets (``rag.retrieval.table_fold``), which its citations highlight over."""
    if not meta.get("table_parts"):
        return {}
    return {"char_start": int(meta["char_start"]), "char_end": int(meta["char_end"])}


def build_answer_messages(question: str, sources: Sequence[Source], model: str | None = None, *,
                          broad: bool | None = None) -> list[ChatMessage]:
    """System (fixed rules, identical on every request) + user (sources, question, language line).

    Args:
        question: The standalone question.
        sources: The numbered sources.
        model: The answering model's name (``answer_system_prompt`` picks its rules). Defaults to none.
        broad: The question's kind as the engine read it. Defaults to its wording's.
    """
    language = detect_language(question)
    broad = is_broad(question) if broad is None else broad
    user = ANSWER_USER_TEMPLATE.format(sources=format_sources([(s.n, s.text) for s in sources]), question=question,
                                       language_line=LANGUAGE_LINE[language])
    return [ChatMessage(role=MessageRole.SYSTEM, content=answer_system_prompt(language, model, broad=broad)),
            ChatMessage(role=MessageRole.USER, content=user)]


def abstain_text(question: str) -> str:
    return ABSTAIN_ZH if detect_language(question) == "zh" else ABSTAIN_EN


def is_abstention(answer: str) -> bool:
    """True when the answer says the documents do not contain the answer (English or Chinese)."""
    flat = " ".join(strip_markers(answer).lower().split())
    if not flat:
        return True
    return any(marker in flat for marker in ABSTAIN_MARKERS)


def without_abstention(answer: str) -> str:
    """``answer`` without the sentences that say the documents lack the answer ("" when nothing else is left)."""
    kept = [answer[start:end].strip() for start, end in passage_sentences(answer)
            if not is_abstention(answer[start:end])]
    return " ".join(part for part in kept if part)


def add_inferred_markers(answer: str, citations: Sequence[Any]) -> tuple[str, int]:
    """``answer`` with an ``[n]`` marker on each sentence whose source was matched without one.

    Small models often answer correctly but forget the markers; the reader should still see which
    source backs each sentence. The marker goes before the sentence's closing punctuation. Returns the
    new text and how many markers were added (sentences not found verbatim are left alone).
    """
    added = 0
    for citation in citations:
        if not getattr(citation, "inferred", False) or not citation.sentence:
            continue
        at = answer.find(citation.sentence)
        if at < 0:
            continue
        end = at + len(citation.sentence)
        answer = f"{answer[:at]}{with_marker(citation.sentence, citation.n)}{answer[end:]}"
        added += 1
    return answer, added


def with_marker(sentence: str, n: int) -> str:
    """``sentence`` with ``[n]`` before its closing punctuation, after a space unless the text before is Chinese."""
    body = sentence.rstrip(".!?。！？")
    space = "" if _CJK.search(body[-1:] or "") else " "
    return f"{body}{space}[{n}]{sentence[len(body):]}"


def strip_markers(text: str) -> str:
    return re.sub(r"\s+([.,;:!?。，；：！？])", r"\1", MARKER_RE.sub("", text)).strip()


def answer_pieces(answer: str) -> list[str]:
    """The answer's sentences as written (markers included, stripped of surrounding space, none empty)."""
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(answer):
        pieces.append(answer[start:match.end()])
        start = match.end()
    pieces.append(answer[start:])
    return [p.strip() for p in pieces if p.strip()]


def cited_sentences(answer: str, max_n: int) -> list[CitedSentence]:
    """Split an answer into sentences and the source numbers each cites (numbers > ``max_n`` dropped).

    Markers written after the full stop ("... 1200 mg. [1]") belong to the sentence before them.
    """
    result = []
    for raw in answer_pieces(answer):
        numbers: list[int] = []
        for match in MARKER_RE.finditer(raw):
            for part in re.split(r"[,，、]", match.group(1)):
                value = int(part)
                if 1 <= value <= max_n and value not in numbers:
                    numbers.append(value)
        text = strip_markers(raw)
        if text:
            result.append(CitedSentence(text, numbers))
    return result


def best_quote(sentence: str, source_text: str) -> str:
    """The verbatim sentence (or two adjacent sentences) of the source that best supports ``sentence``."""
    spans = passage_sentences(source_text)
    if not spans:
        return source_text.strip()
    wanted = content_tokens(sentence)
    if not wanted:
        s, e = spans[0]
        return source_text[s:e]
    scored = []
    for i, (s, e) in enumerate(spans):
        tokens = content_tokens(source_text[s:e])
        hit = len(wanted & tokens)
        scored.append((hit / len(wanted) - 0.001 * len(tokens) / max(len(wanted), 1), i))
    best_score, best = max(scored)
    start, end = spans[best]
    # a sentence split by the parser (e.g. at a line break) may need its neighbour, unless evidence fitting
    # put a gap (" … ") between them
    if best + 1 < len(spans) and "…" not in source_text[end:spans[best + 1][0] + 2]:
        pair = overlap(sentence, source_text[start:spans[best + 1][1]])
        if pair > best_score + 0.2:
            end = spans[best + 1][1]
    return source_text[start:end].strip("… ")


def infer_source(sentence: str, sources: Sequence[Source], min_overlap: float = 0.5) -> Source | None:
    """The source sharing most content with an uncited sentence, when it shares at least ``min_overlap``."""
    best, best_score = None, min_overlap
    for source in sources:
        score = overlap(sentence, source.text)
        if score >= best_score + (1e-9 if best else 0):
            best, best_score = source, score
    return best

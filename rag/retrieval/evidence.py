"""Evidence fitting: the sentences of each retrieved passage that matter to the question, within a budget.

Whole chunks waste the context budget: a 200-token chunk usually answers a factoid question in one
sentence, and the chunk ranked third (often the one holding the answer) was cut whole when the first two
filled the budget. Fitting evidence instead keeps, for every passage in rank order, its best sentence
first (the one holding most of the question's rare words, IDF-weighted), then fills what is left of the
budget with the next best sentences and the sentence after each best one (answers often continue
there). The kept sentences stay in document order; a gap between them is shown as " … ".

A table passage (``kind == "table"``) competes with its body rows only: its caption and header row hold the
question's words ("the table of SI prefixes") and would win the budget from the row that answers. Its header row
comes along, counted in the budget, with the first row kept, so the model can read the columns.

The excerpt replaces the node's text (same node id, so citations still resolve to the chunk and its
page); ``metadata["evidence"]`` records the kept character spans of the chunk.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence

from llama_index.core.schema import MetadataMode, NodeWithScore

from rag.retrieval.nodes import annotate_node
from rag.text.splitting import passage_sentences
from rag.text.table_text import is_separator_row
from rag.text.tokenizer import tokenize

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]
IdfLookup = Callable[[Iterable[str]], dict[str, float]]

GAP = " … "
# Interrogatives and auxiliaries as the BM25 tokenizer leaves them: the answer sentence seldom repeats them.
QUESTION_WORDS = frozenset(
    "what who whom whose when where whi how which did doe do were was is are mani much "
    "什么 哪 哪个 哪些 哪里 哪儿 谁 何时 何 多少 几 几个 如何 怎么 怎样 怎么样 为什么 为何 是否 吗 呢".split())

# "What does RAPT stand for?": the sentence that answers spells the name out ("Retrieval Augmented Prompt Tuning
# (RAPT)") and seldom says "stand", which a rare "long-standing" elsewhere would otherwise outweigh.
_EXPANSION_FRAME_RE = re.compile(r"\b(?:stands?|short)\s+for\b", re.IGNORECASE)
# Asked what an acronym stands for, the sentence that defines it ("… Prompt Tuning (RAPT) as a …") answers, even
# when another sentence shares more of the question's words ("NC-RAPT … using …").
_ACRONYM_RE = re.compile(r"\b[A-Z][A-Z0-9-]*[A-Z]\b")
DEFINITION_BONUS = 0.5


@dataclass
class _Sentence:
    node: int  # index of the passage in rank order
    index: int  # index of the sentence within its passage
    start: int
    end: int
    score: float
    cost: int


def question_terms(question: str, idf: IdfLookup | None) -> dict[str, float]:
    """The question's search terms (question words and an "X stand for" frame dropped) with their IDF weights (1.0
    each without IDF)."""
    terms = [t for t in dict.fromkeys(tokenize(without_frame(question))) if t not in QUESTION_WORDS]
    if not terms:
        return {}
    return idf(terms) if idf is not None else {t: 1.0 for t in terms}


def without_frame(question: str) -> str:
    """The question without an "X stand for" frame, whose words the answer seldom repeats."""
    return _EXPANSION_FRAME_RE.sub(" ", question)


def sentence_score(text: str, weights: dict[str, float]) -> float:
    """IDF-weighted share of the question's terms present in ``text`` (0..1)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    present = set(tokenize(text))
    return sum(w for term, w in weights.items() if term in present) / total


def fit_evidence(nodes: Sequence[NodeWithScore], question: str, max_tokens: int, count: TokenCounter, *,
                 idf: IdfLookup | None = None, overhead: int = 12) -> list[NodeWithScore]:
    """Excerpts of ``nodes`` (rank order kept) whose total cost fits ``max_tokens``.

    Args:
        nodes: The passages in rank order.
        question: The question the evidence is for.
        max_tokens: The budget, in ``count`` units, for all excerpts together.
        count: The token counter (the answering model's tokenizer when it has one).
        idf: Term -> IDF lookup (``KeywordIndex.idf``). Defaults to equal weights.
        overhead: Tokens each passage costs besides its text (the source fence). Defaults to 12.
    """
    weights = question_terms(question, idf)
    # asked what an acronym stands for: the sentence that spells it out ("… (RAPT) …") answers
    asks_expansion = bool(_EXPANSION_FRAME_RE.search(question))
    definitions = [f"({acronym})" for acronym in dict.fromkeys(_ACRONYM_RE.findall(question))] if asks_expansion else []
    texts = [item.node.get_content(metadata_mode=MetadataMode.NONE) for item in nodes]
    per_node: list[list[_Sentence]] = []
    headers: dict[int, _Sentence] = {}  # a table passage's header row, kept with any of its rows
    for n, text in enumerate(texts):
        spans = passage_sentences(text) or ([(0, len(text))] if text.strip() else [])
        header = table_header(text) if nodes[n].node.metadata.get("kind") == "table" else None
        if header is not None:  # the header first (never scored), then only the body rows compete
            rows = [(s, e) for s, e in spans if s > header[1] and not is_separator_row(text[s:e])]
            spans = [header, *rows]
        rank_bonus = 0.02 * (len(nodes) - n)  # ties go to the better-ranked passage
        per_node.append([_Sentence(n, i, s, e, sentence_score(text[s:e], weights) + rank_bonus
                                   + DEFINITION_BONUS * any(d in text[s:e] for d in definitions),
                                   count(text[s:e]) + 1) for i, (s, e) in enumerate(spans)])
        if header is not None:
            headers[n] = per_node[-1][0] = replace(per_node[-1][0], score=-1.0)
    chosen: set[tuple[int, int]] = set()
    used = 0

    def take(sentence: _Sentence) -> bool:
        nonlocal used
        key = (sentence.node, sentence.index)
        if key in chosen:
            return True
        first = not any(k[0] == sentence.node for k in chosen)
        header = headers.get(sentence.node) if first and sentence.index else None
        extra = sentence.cost + (overhead if first else 0) + (header.cost if header is not None else 0)
        if used + extra > max_tokens:
            return False
        chosen.add(key)
        if header is not None:
            chosen.add((header.node, header.index))
        used += extra
        return True

    # 1. every passage's best sentence, in rank order; 2. the sentence after each; 3. the rest by score
    best = [max(sentences, key=lambda s: s.score) if sentences else None for sentences in per_node]
    for sentence in best:
        if sentence is not None:
            take(sentence)
    for sentence, sentences in zip(best, per_node):
        if sentence is not None and (sentence.node, sentence.index) in chosen and sentence.index + 1 < len(sentences):
            take(sentences[sentence.index + 1])
    rest = sorted((s for sentences in per_node for s in sentences), key=lambda s: (-s.score, s.node, s.index))
    for sentence in rest:
        take(sentence)
    out = []
    for n, item in enumerate(nodes):
        keep = [s for s in per_node[n] if (n, s.index) in chosen]
        if not keep:
            continue
        out.append(_excerpt(item, texts[n], keep))
    if definitions:  # and its passage goes first
        out.sort(key=lambda item: not any(d in item.node.get_content() for d in definitions))
    return out


def table_header(text: str) -> tuple[int, int] | None:
    """(start, end) of a Markdown table's header row: the line above its ``| --- |`` line (None: no such line)."""
    offset = 0
    previous: tuple[int, int] | None = None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if is_separator_row(stripped):
            return previous
        if stripped:
            start = offset + line.index(stripped[0])
            previous = (start, start + len(stripped)) if stripped.startswith("|") else None
        offset += len(line)
    return None


def _excerpt(item: NodeWithScore, text: str, keep: list[_Sentence]) -> NodeWithScore:
    pieces: list[str] = []
    spans: list[list[int]] = []
    previous = -2
    for sentence in keep:
        if spans and sentence.index == previous + 1:
            pieces.append(text[spans[-1][1]:sentence.end])
            spans[-1][1] = sentence.end
        else:
            if pieces:
                pieces.append(GAP)
            pieces.append(text[sentence.start:sentence.end])
            spans.append([sentence.start, sentence.end])
        previous = sentence.index
    excerpt = "".join(pieces)
    copy = annotate_node(item, evidence=spans)
    copy.node = copy.node.model_copy(update={"text": excerpt})
    return copy

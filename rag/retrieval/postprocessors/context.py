"""Context fitting: the passages the answer is written from, at most ``top_k`` and within the budget.

This is the one place the context budget is applied: the engine numbers exactly the passages this
stage keeps, and counts with the answering model's own tokenizer when it has one. With ``evidence`` on
(the default) it fits sentences, not whole chunks (``rag.retrieval.evidence``): each passage's sentences
that hold the question's rare words, so more of the right text reaches the model within the same budget.
A broad question (``rag.retrieval.broad``: "summarise…", "what problem does this paper address…") gets
whole passages and ``broad_max_tokens`` instead, since its answer is spread over them.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, ClassVar

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from rag.retrieval.evidence import IdfLookup, fit_evidence
from rag.retrieval.nodes import annotate_node, node_text
from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import as_search_query, expanded, question_is_broad, report
from rag.retrieval.question_kind import is_broad
from rag.text.language import count_tokens

logger = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]


class ContextBudgetPostprocessor(TracedPostprocessor):
    """Keep the first ``top_k`` nodes while their text fits in ``max_tokens``; stop at the first that does not.

    The text counted is what the LLM sees (``MetadataMode.LLM``). If not even the first node fits, it is
    truncated to the budget (at a word boundary when possible, ``metadata["truncated"]`` True) and
    returned alone, so the result is never empty when given nodes with text. Reflection's widening
    (``SearchQuery.expansion``) grows ``top_k`` linearly and the budget by half per round.

    Args:
        top_k: Passages at most. Defaults to 5.
        max_tokens: The context budget. Defaults to 900.
        count_tokens: ``str -> int``. Defaults to ``rag.text.language.count_tokens`` (words, plus one per
            CJK character), the unit ``chunking.chunk_size`` uses; pass the answering model's own counter.
        evidence: Fit the question's sentences of each passage rather than whole passages. Defaults to False.
        broad_max_tokens: The budget for broad questions (whole passages). Defaults to ``max_tokens``.
        idf: Term -> IDF (``KeywordIndex.idf``) for scoring sentences. Defaults to equal weights.
    """

    stage_name: ClassVar[str] = "final"
    top_k: int = Field(default=5, ge=1)
    max_tokens: int = Field(default=900, ge=1)
    evidence: bool = Field(default=False)
    broad_max_tokens: int = Field(default=0, ge=0)
    _count_tokens: TokenCounter = PrivateAttr()
    _idf: IdfLookup | None = PrivateAttr(default=None)

    def __init__(self, top_k: int = 5, max_tokens: int = 900, count_tokens: TokenCounter | None = None, *,
                 evidence: bool = False, broad_max_tokens: int = 0, idf: IdfLookup | None = None,
                 **kwargs: Any) -> None:
        super().__init__(top_k=top_k, max_tokens=max_tokens, evidence=evidence,
                         broad_max_tokens=broad_max_tokens, **kwargs)
        self._count_tokens = count_tokens or count_tokens_default
        self._idf = idf

    @classmethod
    def class_name(cls) -> str:
        return "ContextBudgetPostprocessor"

    def budget(self, expansion: int = 0, *, broad: bool = False) -> int:
        """The budget in tokens for reflection's widening ``expansion`` (0 normally)."""
        base = (self.broad_max_tokens or self.max_tokens) if broad else self.max_tokens
        return int(base * (1 + 0.5 * expansion))

    def fit(self, nodes: list[NodeWithScore], expansion: int = 0, question: str = "",
            broad: bool | None = None) -> list[NodeWithScore]:
        """The passages the answer would be written from, without recording anything (``broad`` None: read from
        the question's wording)."""
        top = nodes[: expanded(self.top_k, expansion)]
        broad = is_broad(question) if broad is None else broad
        if self.evidence and question and not broad:
            return fit_evidence(top, question, self.budget(expansion), self._count_tokens, idf=self._idf)
        kept = fit_to_budget(top, self.budget(expansion, broad=broad), self._count_tokens)
        if top and not kept:
            truncated = truncate_node(top[0], self.budget(expansion, broad=broad), self._count_tokens)
            kept = [truncated] if truncated is not None else []
        return kept

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        expansion = as_search_query(query_bundle).expansion if query_bundle is not None else 0
        question = query_bundle.query_str if query_bundle is not None else ""
        broad = question_is_broad(query_bundle)
        budget, top = self.budget(expansion, broad=broad), nodes[: expanded(self.top_k, expansion)]
        kept = self.fit(nodes, expansion, question, broad)
        if top and not kept:
            report(query_bundle, fallback=f"the first passage cannot be cut to fit {budget} tokens")
        elif kept and kept[0].node.metadata.get("truncated"):
            report(query_bundle, fallback=f"the first passage exceeds the {budget}-token budget; truncated it")
        if top:  # whether top_k or the context budget decided how many passages the LLM sees
            report(query_bundle, note=f"{len(kept)} of the top {len(top)} fit the {budget}-token context budget")
        if broad:
            report(query_bundle, note="broad question: whole passages within the broad-question budget")
        elif self.evidence and kept:
            report(query_bundle, note="fitted the question's sentences of each passage (evidence), not whole passages")
        return kept


def fit_to_budget(nodes: list[NodeWithScore], max_tokens: int, count: TokenCounter) -> list[NodeWithScore]:
    """The longest prefix of ``nodes`` whose LLM-visible text fits ``max_tokens``."""
    kept: list[NodeWithScore] = []
    used = 0
    for item in nodes:
        cost = count(node_text(item, MetadataMode.LLM))
        if used + cost > max_tokens:
            break
        kept.append(item)
        used += cost
    return kept


def truncate_node(item: NodeWithScore, max_tokens: int, count: TokenCounter) -> NodeWithScore | None:
    """A copy of ``item`` cut to the longest prefix that fits (not mid-word), or None if nothing fits."""
    text = item.node.get_content(metadata_mode=MetadataMode.NONE)
    overhead = max(0, count(node_text(item, MetadataMode.LLM)) - count(text))
    budget = max_tokens - overhead
    low, high = 0, len(text)  # largest prefix length whose count fits
    while low < high:
        middle = (low + high + 1) // 2
        if count(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    prefix = text[:low]
    if low < len(text) and prefix and _latin(text[low]) and _latin(prefix[-1]) and " " in prefix:
        prefix = prefix[: prefix.rfind(" ")]
    prefix = prefix.rstrip()
    if not prefix:
        return None
    copy = annotate_node(item, truncated=True)
    copy.node = copy.node.model_copy(update={"text": prefix})
    return copy


def _latin(char: str) -> bool:
    return char.isascii() and char.isalnum()


def count_tokens_default(text: str) -> int:
    return count_tokens(text)

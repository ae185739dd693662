"""Is each cited sentence supported by the chunk it cites?

Checks, cheapest first:

* numbers: every number in the sentence must appear in the cited source ("1500 mg" against a source
  saying 1200 fails however similar the words are);
* lexical: share of the sentence's content tokens found in the source (stemmed words, CJK characters);
* semantic: cosine similarity of the sentence and the best-matching passage, with the injected embedder;
* LLM (optional): a yes/no question per sentence.

A sentence passes when the numbers match and either the lexical or the semantic score clears its
threshold; when the LLM check runs and answers, its verdict decides unless the overlap is near-total.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Sequence

import numpy as np
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from rag.answer.types import Source
from rag.answer.citations import CitedSentence, best_quote
from rag.text.overlap import overlap
from rag.text.script import to_simplified
from rag.text.language import detect_language
from rag.prompts import GROUNDEDNESS_PROMPT, as_quoted_data, format_sources

logger = logging.getLogger(__name__)

LEXICAL_MIN = 0.5
SEMANTIC_MIN = 0.75
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


def check_groundedness(sentences: Sequence[CitedSentence], sources: Sequence[Source], *, embedder: Any = None,
                       llm: Any = None) -> list[dict[str, Any]]:
    """One record per cited sentence: ``sentence, citations, supported, lexical, semantic, llm, reason``.

    Args:
        sentences: The answer's sentences with the source numbers they cite (uncited ones are skipped).
        sources: The numbered sources the answer was written from.
        embedder: A llama-index embedding, or an ``EmbedderRouter`` (``for_language``). Defaults to none.
        llm: When given, each sentence is also judged by the LLM. Defaults to none.
    """
    by_number = {s.n: s for s in sources}
    records = []
    for sentence in sentences:
        cited = [by_number[n] for n in sentence.numbers if n in by_number]
        if not cited:
            continue
        text = " ".join(s.text for s in cited)
        quote = " ".join(best_quote(sentence.text, s.text) for s in cited)
        lexical = round(overlap(sentence.text, text), 3)
        missing = sorted(set(_numbers(sentence.text)) - set(_numbers(text)))
        semantic = _similarity(embedder, sentence.text, quote)
        verdict = _llm_verdict(llm, sentence.text, quote) if llm is not None else None
        heuristic = lexical >= LEXICAL_MIN or (semantic is not None and semantic >= SEMANTIC_MIN)
        supported = heuristic if verdict is None else (verdict or lexical >= 0.9)
        supported = supported and not missing
        reason = ""
        if missing:
            reason = f"numbers not in the cited source: {', '.join(missing)}"
        elif not supported:
            reason = "the LLM judged it unsupported" if verdict is False else "little overlap with the cited source"
        records.append({"sentence": sentence.text, "citations": list(sentence.numbers), "supported": supported,
                        "lexical": lexical, "semantic": semantic, "llm": verdict, "reason": reason})
    return records


def _numbers(text: str) -> list[str]:
    return [n.replace(",", "") for n in _NUMBER_RE.findall(text)]


def _similarity(embedder: Any, a: str, b: str) -> float | None:
    if embedder is None:
        return None
    try:
        model = embedder.for_language(detect_language(a + b)) if hasattr(embedder, "for_language") else embedder
        pair = [to_simplified(a), to_simplified(b)]  # an answer in one Chinese script may cite a source in the other
        va, vb = (np.asarray(v, dtype=np.float32) for v in model.get_text_embedding_batch(pair))
        denominator = float(np.linalg.norm(va) * np.linalg.norm(vb))
        return round(float(va @ vb) / denominator, 3) if denominator else None
    except Exception as exc:  # noqa: BLE001 - the lexical check still stands
        logger.warning("semantic groundedness check failed: %s", exc)
        return None


def _llm_verdict(llm: Any, statement: str, source: str) -> bool | None:
    prompt = GROUNDEDNESS_PROMPT.format(source=format_sources([(1, source)]), statement=as_quoted_data(statement))
    try:
        reply = llm.chat([ChatMessage(role=MessageRole.USER, content=prompt)], max_tokens=8).message.content or ""
    except Exception as exc:  # noqa: BLE001
        logger.warning("LLM groundedness check failed: %s", exc)
        return None
    head = reply.strip().lower()[:12]
    if head.startswith(("yes", "是", "支持", "true")):
        return True
    if head.startswith(("no", "否", "不", "false")):
        return False
    return None

"""How much two texts share: content words (stemmed English without stop words, numbers) and CJK characters.

Cheap, model-free signals used to match an answer sentence to the source that supports it and to
pick the sentences of a passage that matter to a question.
"""

from __future__ import annotations

import re

from rag.text.tokenizer import tokenize

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_FUNCTION_CHARS = "的了是在和与及或也就都而这那之其着把被从对于以所为"


def content_tokens(text: str) -> set[str]:
    """Stemmed Latin words (no stop words), numbers and single CJK characters."""
    latin = _CJK.sub(" ", text)
    tokens = {t for t in tokenize(latin)}
    tokens.update(c for c in _CJK.findall(text) if c not in _CJK_FUNCTION_CHARS)
    return tokens


def overlap(sentence: str, passage: str) -> float:
    """Share of the sentence's content tokens that appear in the passage (0..1)."""
    wanted = content_tokens(sentence)
    if not wanted:
        return 0.0
    return len(wanted & content_tokens(passage)) / len(wanted)

"""Language detection and token counting that work without any model.

Chunk sizes and context budgets are counted in "tokens" that mean the same thing for both languages
the app serves: a CJK character is one token (Chinese has no spaces and one character carries roughly
the meaning of a short English word), and a Latin word or a number is one token. Punctuation is free.
This keeps a 220-token chunk about one paragraph long in either language, with no tokenizer download.
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["zh", "en"]

# CJK unified ideographs: extension A, the basic block, compatibility ideographs, extensions B-F.
CJK_IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
# Kana and Hangul are not Chinese, but like ideographs they are written without spaces.
CJK_SYLLABLES = "\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af"

CJK_RE = re.compile(f"[{CJK_IDEOGRAPHS}]")
"""Matches one CJK ideograph (Chinese character)."""

TOKEN_RE = re.compile(
    rf"[{CJK_IDEOGRAPHS}{CJK_SYLLABLES}]"  # every CJK character on its own
    r"|\d+(?:[.,]\d+)*"  # 1,200 or 3.14 is one number
    rf"|[^\W_{CJK_IDEOGRAPHS}{CJK_SYLLABLES}]+"  # a run of letters/digits that is not CJK
)
"""Matches one token as ``count_tokens`` counts them."""

_LATIN_WORD_RE = re.compile(rf"[^\W\d_{CJK_IDEOGRAPHS}{CJK_SYLLABLES}]+")

# Share of ideographs among (ideographs + Latin words) from which text counts as Chinese. A Chinese
# sentence full of English terms ("使用 BERT 和 RAG 方法") stays Chinese; an English paragraph that
# quotes a Chinese name stays English.
ZH_THRESHOLD = 0.3


def count_tokens(text: str) -> int:
    """Count tokens: one per CJK character, one per Latin word or number; punctuation is free."""
    return sum(1 for _ in TOKEN_RE.finditer(text))


def detect_language(text: str) -> Language:
    """Return ``"zh"`` when Chinese characters dominate ``text``, else ``"en"``.

    Digits and punctuation are ignored, so tables of numbers follow the words around them. Text with
    no letters at all is ``"en"``.
    """
    ideographs = len(CJK_RE.findall(text))
    if not ideographs:
        return "en"
    latin_words = len(_LATIN_WORD_RE.findall(text))
    return "zh" if ideographs / (ideographs + latin_words) >= ZH_THRESHOLD else "en"


def cjk_share(text: str) -> float:
    """Fraction of non-space characters that are CJK ideographs (0.0 for empty text)."""
    visible = sum(1 for char in text if not char.isspace())
    return len(CJK_RE.findall(text)) / visible if visible else 0.0

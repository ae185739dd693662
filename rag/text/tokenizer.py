"""The BM25 tokenizer: Snowball-stemmed English words and jieba-segmented Chinese, in one stream.

Mixed-language text is common in our users' documents (Chinese reports quoting English terms), so
the text is split into CJK runs and everything else, and each run gets its own treatment. Chinese
runs are first converted to simplified script (``rag.text.script``), so traditional and simplified
text share one vocabulary and jieba segments both with its simplified dictionary.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

from rag.text.script import fold_ideographs, to_simplified

logging.getLogger("jieba").setLevel(logging.WARNING)
jieba.setLogLevel(logging.WARNING)

# Bump when tokens change for the same text: saved keyword indexes are then re-tokenized from their
# stored text (rag.index.keywords). 2: Chinese runs converted to simplified script before segmentation.
# 3: Kangxi radicals and compatibility ideographs folded to the ideographs they stand for (⼈ -> 人).
TOKENIZER_VERSION = 3

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_EN_STOP = frozenset(STOPWORDS_EN)
# bm25s' Chinese list drops content words such as 最大 and 主要; only true function words go here.
_ZH_STOP = frozenset("的 了 是 在 和 与 及 或 也 就 都 而 这 那 之 其 着 吗 呢 吧 啊 把 被 从 对 于 以 所".split())


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def tokenize(text: str) -> list[str]:
    """Tokens for BM25: stemmed lower-case words and Chinese words (search-mode segmentation).

    Search-mode segmentation also emits the sub-words of long compounds (中华人民共和国 → 中华, 华人,
    人民, 共和, 共和国, ...), which lets a short query term match inside a long compound.
    """
    tokens: list[str] = []
    position = 0
    text = fold_ideographs(text)  # else a radical look-alike ends a Chinese run and is dropped as a symbol
    for match in _CJK_RUN.finditer(text):
        tokens.extend(_latin_tokens(text[position:match.start()]))
        tokens.extend(_chinese_tokens(match.group()))
        position = match.end()
    tokens.extend(_latin_tokens(text[position:]))
    return tokens


def _latin_tokens(text: str) -> list[str]:
    words = [w.lower() for w in _LATIN_WORD.findall(text)]
    words = [w for w in words if w not in _EN_STOP and (len(w) > 1 or w.isdigit())]
    return _stemmer().stemWords(words) if words else []


def _chinese_tokens(run: str) -> list[str]:
    return [w for w in jieba.cut_for_search(to_simplified(run)) if w.strip() and w not in _ZH_STOP]

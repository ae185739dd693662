"""Chinese script normalisation: traditional (Taiwan, Hong Kong) text read as simplified.

jieba's dictionary and the BM25 vocabulary of a simplified library are simplified; a traditional
question (臺灣的軟體) would share no token with a simplified passage (台湾的软件), and jieba segments
traditional text poorly. So the text BM25 indexes and the question it searches with are both
converted to simplified Chinese with OpenCC before segmentation. Only the *search* form changes:
stored and displayed text stays as written.

The conversion is OpenCC's ``t2s`` (character by character, plus OpenCC's own phrase table), chosen
on the tuning half of CMRC2018 (docs/retrieval-protocol.md): BM25 alone, traditional questions over
traditional passages went from R@1 0.944 unconverted to 0.965 (simplified: 0.965), and across scripts
from 0.649 to 0.963. ``tw2sp``, which also maps Taiwan phrases to mainland words (軟體 → 软件), was
equal or 0.0006 lower on every case measured. Simplified text passes through (almost) unchanged, and
non-CJK text is never touched.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache

logger = logging.getLogger(__name__)

SEARCH_CONVERSION = "t2s"
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_lock = threading.Lock()


@lru_cache(maxsize=4)
def _converter(config: str):
    try:
        import opencc
    except ImportError as exc:  # a clear error beats silently indexing traditional text unconverted
        raise ImportError("Chinese script normalisation needs the opencc package: pip install opencc") from exc
    return opencc.OpenCC(config)


# Some PDF producers map common characters to look-alikes from other blocks: Datawhale's llm-universe case writes
# 个⼈ and ⽤户 with Kangxi radicals (U+2F08 ⼈, U+2F64 ⽤: 535 of its 25,776 characters). They look the same but are
# symbols to jieba, the embedders and the model, so "个人" never matched. Each folds to the one ideograph it stands
# for (its NFKC form), one character for one, so offsets into the text stay valid.
_COMPATIBILITY_BLOCKS = ((0x2E80, 0x2EFF), (0x2F00, 0x2FDF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_COMPATIBILITY = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _COMPATIBILITY_BLOCKS) + "]")


@lru_cache(maxsize=1)
def _ideograph_table() -> dict[int, str]:
    table = {}
    for low, high in _COMPATIBILITY_BLOCKS:
        for code in range(low, high + 1):
            folded = unicodedata.normalize("NFKC", chr(code))
            if len(folded) == 1 and folded != chr(code):
                table[code] = folded
    return table


def fold_ideographs(text: str) -> str:
    """``text`` with Kangxi radicals and compatibility ideographs written as the ideographs they stand for
    (⼈ -> 人); same length, everything else unchanged."""
    if not text or not _COMPATIBILITY.search(text):
        return text
    return text.translate(_ideograph_table())


def to_simplified(text: str, conversion: str = SEARCH_CONVERSION) -> str:
    """``text`` with traditional Chinese converted to simplified and look-alike ideographs folded
    (``fold_ideographs``); text without Han characters is returned as is.

    Args:
        text: Any text.
        conversion: An OpenCC configuration name. Defaults to ``SEARCH_CONVERSION``.
    """
    text = fold_ideographs(text)
    if not text or not _HAN.search(text):
        return text
    converter = _converter(conversion)
    with _lock:  # the binding does not document thread safety; conversions are short, so serialise them
        return converter.convert(text)


def to_traditional(text: str, conversion: str = "s2twp") -> str:
    """``text`` converted to traditional Chinese (Taiwan standard with Taiwan phrases by default).

    Used to build traditional evaluation sets from simplified ones.

    Args:
        text: Any text.
        conversion: An OpenCC configuration name (``s2twp``, ``s2hk``, ``s2t``). Defaults to ``s2twp``.
    """
    if not text or not _HAN.search(text):
        return text
    converter = _converter(conversion)
    with _lock:
        return converter.convert(text)

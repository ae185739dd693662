"""Scoring an answer against gold answers: SQuAD-style EM and F1 (CMRC-style character F1 for Chinese)."""

from __future__ import annotations

import logging
import re
import string
from collections import Counter



logger = logging.getLogger(__name__)

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ZH_PUNCT = set("，。！？、；：“”‘’（）《》【】—…·「」『』〈〉～")


def normalize_en(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def normalize_zh(text: str) -> str:
    return "".join(ch for ch in text.lower() if not ch.isspace() and ch not in _ZH_PUNCT
                   and ch not in set(string.punctuation))


def _tokens(text: str, chinese: bool) -> list[str]:
    return list(normalize_zh(text)) if chinese else normalize_en(text).split()


def exact_match(prediction: str, golds: list[str], chinese: bool) -> float:
    norm = normalize_zh if chinese else normalize_en
    return float(any(norm(prediction) == norm(g) for g in golds))


def f1_score(prediction: str, golds: list[str], chinese: bool) -> float:
    best = 0.0
    predicted = _tokens(prediction, chinese)
    for gold in golds:
        wanted = _tokens(gold, chinese)
        common = sum((Counter(predicted) & Counter(wanted)).values())
        if common:
            precision, recall = common / len(predicted), common / len(wanted)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


def contains_answer(text: str, golds: list[str], chinese: bool) -> bool:
    norm = normalize_zh if chinese else normalize_en
    haystack = norm(text)
    return any(norm(g) and norm(g) in haystack for g in golds)


# -- data -------------------------------------------------------------------------------------


from __future__ import annotations

import pytest

from rag.text.language import CJK_RE, cjk_share, count_tokens, detect_language


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("布洛芬每日最大剂量为1200毫克。", "zh"),
        ("本文提出 Retrieval-Augmented Generation (RAG) 方法，用于问答。", "zh"),
        ("营业收入 1,234,567.00 2,345,678.00 净利润 12.5%", "zh"),
        ("The maximum daily dose of ibuprofen for adults is 1200 milligrams.", "en"),
        ("The study was led by Zhang San (张三) at Peking University in 2021.", "en"),
        ("1200 — 3.14 (42) !!!", "en"),
        ("", "en"),
    ],
    ids=["chinese", "chinese-with-english-terms", "chinese-table", "english", "english-with-name",
         "numbers-only", "empty"],
)
def test_detect_language(text: str, expected: str) -> None:
    assert detect_language(text) == expected


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("Hello, world!", 2),
        ("The dose is 1,200.5 mg.", 5),
        ("布洛芬", 3),
        ("布洛芬每日最大剂量为1200毫克。", 13),  # 12 characters + one number; punctuation is free
        ("使用BERT模型", 5),  # 使 用 BERT 模 型
        ("  \n\t ,.;。！", 0),
        ("café naïve", 2),
    ],
)
def test_count_tokens(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


def test_cjk_re_matches_ideographs_only() -> None:
    assert CJK_RE.findall("a布b。洛1") == ["布", "洛"]
    assert not CJK_RE.search("ひらがな カタカナ 한국어 ，。")


def test_cjk_share() -> None:
    assert cjk_share("") == 0.0
    assert cjk_share("布洛 ab") == pytest.approx(0.5)

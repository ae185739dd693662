"""Traditional Chinese is searched as simplified: the script normaliser, the tokenizer and BM25."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from rag.documents import Chunk
from rag.index.keywords import KeywordIndex
from rag.text.script import to_simplified, to_traditional
from rag.text.tokenizer import TOKENIZER_VERSION, tokenize

TRADITIONAL = "臺灣的軟體公司在網路上發佈資訊"
SIMPLIFIED = "台湾的软体公司在网路上发布资讯"  # the same words, character by character


def _chunk(doc_id: str, text: str) -> Chunk:
    return Chunk(chunk_id=f"{doc_id}:0", doc_id=doc_id, file_name=f"{doc_id}.txt", text=text, index=0,
                 page_start=1, page_end=1, char_start=0, char_end=len(text), language="zh")


def test_traditional_becomes_simplified() -> None:
    assert to_simplified(TRADITIONAL) == SIMPLIFIED
    assert to_simplified(SIMPLIFIED) == SIMPLIFIED  # simplified passes through
    assert to_simplified("Plain English, 123.") == "Plain English, 123."
    assert to_traditional("台湾的软件和信息") == "臺灣的軟體和資訊"


def test_both_scripts_tokenize_alike_and_english_is_untouched() -> None:
    assert tokenize(TRADITIONAL) == tokenize(SIMPLIFIED)
    assert {"台湾", "公司", "发布"} <= set(tokenize(TRADITIONAL))
    assert tokenize("頭髮 running") == tokenize("头发 running") == ["头发", "run"]


def test_bm25_matches_across_scripts_and_keeps_the_text_as_written(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "bm25")
    index.add("tw", [_chunk("tw", "鑼鼓經是傳統器樂及戲曲常用的打擊樂記譜方法。")])
    index.add("cn", [_chunk("cn", "布洛芬每日最大剂量为1200毫克。")])
    index.add("other", [_chunk("other", "今天天气很好，我们去公园散步。")])

    assert index.search("锣鼓经是什么？", k=3)[0].doc_id == "tw"  # simplified question, traditional text
    assert index.search("布洛芬每日最大劑量是多少？", k=3)[0].doc_id == "cn"  # and the other way round
    assert index.get(["tw:0"])["tw:0"].text == "鑼鼓經是傳統器樂及戲曲常用的打擊樂記譜方法。"


def test_an_index_tokenized_by_an_older_tokenizer_is_retokenized_when_opened(tmp_path: Path) -> None:
    folder = tmp_path / "bm25"
    index = KeywordIndex(folder)
    index.add("tw", [_chunk("tw", "鑼鼓經是傳統器樂常用的記譜方法")])
    index.close()
    with sqlite3.connect(folder / "tokens.sqlite3") as db:  # what a version-1 index stored: unconverted jieba tokens
        db.execute("UPDATE chunk_tokens SET tokens = ?", (json.dumps(["鑼鼓", "經是", "傳統"], ensure_ascii=False),))
        db.execute("DELETE FROM meta")
    # the saved matrices stay: they are trusted only if re-tokenizing brings the rows back to what they were built from

    reopened = KeywordIndex(folder)

    assert [h.doc_id for h in reopened.search("锣鼓经", k=1)] == ["tw"]
    with sqlite3.connect(folder / "tokens.sqlite3") as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'tokenizer_version'").fetchone() == (str(TOKENIZER_VERSION),)
        assert "锣鼓" in json.loads(db.execute("SELECT tokens FROM chunk_tokens").fetchone()[0])


def test_kangxi_radical_look_alikes_read_as_the_ideographs_they_stand_for(tmp_path: Path) -> None:
    # Datawhale's llm-universe case writes 个⼈ and ⽤户 with Kangxi radicals (U+2F08, U+2F64)
    from rag.prompts import format_sources
    from rag.text.script import fold_ideographs

    written = "个⼈知识库助⼿：⽤户上传⽂档"
    assert fold_ideographs(written) == "个人知识库助手：用户上传文档" and len(fold_ideographs(written)) == len(written)
    assert tokenize(written) == tokenize("个人知识库助手：用户上传文档")
    assert to_simplified("個⼈") == "个人" and fold_ideographs("plain text, 中文") == "plain text, 中文"
    assert "个人知识库助手" in format_sources([(1, written)])  # what the model reads
    index = KeywordIndex(tmp_path / "bm25")
    index.add("radicals", [_chunk("radicals", written)])
    index.add("other", [_chunk("other", "公司年度报告的主要会计数据")])
    assert [h.doc_id for h in index.search("个人知识库助手", k=1)] == ["radicals"]

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from rag.config import QueryConfig
from rag.prompts import HYDE_PROMPT, QUERY_REWRITE_PROMPT
from rag.retrieval.query_parse import clean_passage, parse_rewrite
from rag.retrieval.query_rewrite import QueryEnhancer


class CannedLLM(CustomLLM):
    """Replies with ``reply`` (or each of ``replies`` in turn); records prompts."""

    reply: str = ""
    prompts: list[str] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="canned")

    def _answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._answer(prompt)
        yield CompletionResponse(text=text, delta=text)


class RaisingLLM(CannedLLM):
    def _answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        raise ConnectionError("server unreachable")


class SleepingLLM(CannedLLM):
    delay_s: float = 1.0

    def _answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        time.sleep(self.delay_s)
        return '{"variants": ["too late"]}'


QUERY = "how does BM25 weight terms"
JSON_REPLY = ('{"variants": ["BM25 term weighting formula", "Okapi BM25 term frequency saturation", '
              '"bm25 TERM weighting formula", "how does BM25 weight terms", "inverse document frequency in BM25"], '
              '"key_concepts": ["BM25", "term weighting"], "synonyms": "Okapi BM25, ranking function", '
              '"search_terms": ["BM25", "tf", "idf"]}')


def test_rewrite_parses_json_and_keeps_the_original_first() -> None:
    llm = CannedLLM(reply=JSON_REPLY)

    result = QueryEnhancer(llm, variants=3).rewrite(QUERY)

    assert result.variants == [QUERY, "BM25 term weighting formula", "Okapi BM25 term frequency saturation",
                               "inverse document frequency in BM25"]  # duplicates and the query itself dropped
    assert result.key_concepts == ["BM25", "term weighting"]
    assert result.synonyms == ["Okapi BM25", "ranking function"]
    assert result.search_terms == ["BM25", "tf", "idf"]
    assert result.fallback_reason == "" and not result.cached
    assert QUERY in llm.prompts[0] and "3 different rewordings" in llm.prompts[0] and "English" in llm.prompts[0]


@pytest.mark.parametrize("reply", [
    "Sure! Here you go:\n```json\n{\n  \"variants\": [\"BM25 scoring\", \"Okapi BM25\",],\n}\n```\nHope it helps.",
    "{'variants': ['BM25 scoring', 'Okapi BM25']}",
    "{“variants”: [“BM25 scoring”, “Okapi BM25”]}",
    "Here are the queries:\n1. BM25 scoring\n2) Okapi BM25\n",
    "- \"BM25 scoring\"\n* Okapi BM25",
    "BM25 scoring\nOkapi BM25",
], ids=["fenced-trailing-commas", "single-quotes", "smart-quotes", "numbered", "bullets", "plain-lines"])
def test_parse_rewrite_accepts_small_model_output(reply: str) -> None:
    fields = parse_rewrite(reply, QUERY, max_variants=3)

    assert fields is not None
    assert fields["variants"] == ["BM25 scoring", "Okapi BM25"]


@pytest.mark.parametrize("reply", ["", "I'm sorry, I cannot help with that.", "{}", '{"variants": []}', "```\n```"],
                         ids=["empty", "refusal", "empty-object", "empty-list", "empty-fence"])
def test_garbage_falls_back_to_the_raw_query(reply: str) -> None:
    result = QueryEnhancer(CannedLLM(reply=reply)).rewrite(QUERY)

    assert result.variants == [QUERY]
    assert result.fallback_reason == "LLM output was not usable JSON or a list"
    assert result.search_terms == []


def test_llm_exception_falls_back() -> None:
    result = QueryEnhancer(RaisingLLM()).rewrite(QUERY)

    assert result.variants == [QUERY]
    assert result.fallback_reason == "LLM failed: ConnectionError: server unreachable"


def test_timeout_falls_back_without_waiting_for_the_llm() -> None:
    enhancer = QueryEnhancer(SleepingLLM(delay_s=1.0), timeout_s=0.1)

    start = time.perf_counter()
    result = enhancer.rewrite(QUERY)
    elapsed = time.perf_counter() - start

    assert elapsed < 0.8
    assert result.variants == [QUERY]
    assert result.fallback_reason == "LLM failed: TimeoutError: no answer within 0.1s"
    assert enhancer.busy  # the abandoned call is still running
    deadline = time.monotonic() + 5
    while enhancer.busy and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not enhancer.busy


def test_results_are_cached_per_query_and_variants() -> None:
    llm = CannedLLM(reply=JSON_REPLY)
    enhancer = QueryEnhancer(llm, variants=2)

    first = enhancer.rewrite(QUERY)
    second = enhancer.rewrite(f"  {QUERY} ")
    enhancer.variants = 1
    third = enhancer.rewrite(QUERY)

    assert len(llm.prompts) == 2
    assert second.cached and second.variants == first.variants
    assert not first.cached  # the stored entry is not flagged
    assert third.variants == [QUERY, "BM25 term weighting formula"]


def test_cache_is_lru_and_failures_are_not_cached() -> None:
    llm = CannedLLM(reply=JSON_REPLY)
    enhancer = QueryEnhancer(llm, cache_size=1)
    enhancer.rewrite("query one")
    enhancer.rewrite("query two")
    enhancer.rewrite("query one")
    assert len(llm.prompts) == 3

    failing = QueryEnhancer(RaisingLLM())
    failing.rewrite(QUERY)
    failing.rewrite(QUERY)
    assert len(failing._llm.prompts) == 2


def test_chinese_query_asks_for_chinese() -> None:
    llm = CannedLLM(reply='{"variants": ["检索增强生成的原理"], "search_terms": "检索，生成"}')

    result = QueryEnhancer(llm).rewrite("什么是检索增强生成")
    passage_llm = CannedLLM(reply="检索增强生成把检索到的文档交给大模型。")
    QueryEnhancer(passage_llm).hyde("什么是检索增强生成")

    assert "Simplified Chinese" in llm.prompts[0]
    assert "Simplified Chinese" in passage_llm.prompts[0]
    assert result.variants == ["什么是检索增强生成", "检索增强生成的原理"]
    assert result.search_terms == ["检索", "生成"]


def test_hyde_returns_a_cleaned_passage_and_caches_it() -> None:
    llm = CannedLLM(reply='Passage: "BM25 weights a term by its inverse document frequency and a saturated tf."')
    enhancer = QueryEnhancer(llm)

    result = enhancer.hyde(QUERY)
    again = enhancer.hyde(QUERY)

    assert result.hypothetical_doc == "BM25 weights a term by its inverse document frequency and a saturated tf."
    assert result.fallback_reason == ""
    assert again.cached and len(llm.prompts) == 1
    assert llm.prompts[0] == HYDE_PROMPT.format(query=QUERY, language="English")


@pytest.mark.parametrize("llm,reason", [(RaisingLLM(), "LLM failed: ConnectionError: server unreachable"),
                                        (CannedLLM(reply="```\n\n```"), "LLM returned no usable passage")],
                         ids=["raises", "empty"])
def test_hyde_falls_back_to_the_query(llm: CannedLLM, reason: str) -> None:
    result = QueryEnhancer(llm).hyde(QUERY)

    assert result.hypothetical_doc == QUERY
    assert result.fallback_reason == reason


def test_empty_query_and_validation() -> None:
    llm = CannedLLM(reply=JSON_REPLY)
    assert QueryEnhancer(llm).rewrite("  ").fallback_reason == "empty query"
    assert llm.prompts == []
    with pytest.raises(ValueError):
        QueryEnhancer(llm, variants=0)
    with pytest.raises(ValueError):
        QueryEnhancer(llm, timeout_s=0)
    enhancer = QueryEnhancer.from_config(llm, QueryConfig(variants=5, timeout_s=3.0))
    assert (enhancer.variants, enhancer.timeout_s) == (5, 3.0)


def test_prompts_are_format_safe_and_results_serialise() -> None:
    prompt = QUERY_REWRITE_PROMPT.format(query="a {weird} query", variants=2, language="English")
    assert "a {weird} query" in prompt and '{"variants": ["..."]' in prompt
    assert clean_passage("```text\nAnswer: Foo bar baz.\n```") == "Foo bar baz."
    result = QueryEnhancer(CannedLLM(reply=JSON_REPLY)).rewrite(QUERY)
    assert result.to_dict()["variants"][0] == QUERY


def test_concurrent_rewrites_are_safe() -> None:
    enhancer = QueryEnhancer(CannedLLM(reply=JSON_REPLY), cache_size=4)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            assert enhancer.rewrite(f"question number {i % 6}").variants[1] == "BM25 term weighting formula"
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

"""The query engine answering over a real store (Chroma + bm25s, fake vectors) with scripted LLMs."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from llama_index.core.llms.callbacks import llm_completion_callback

from rag.answer.types import ChatTurn
from rag.config import RagConfig
from rag.ingest.ingestor import Ingestor
from rag.models.llm_openai import LLMUnavailableError
from rag.prompts import (ABSTAIN_EN, ABSTAIN_ZH, ANSWER_SYSTEM_PROMPT, ANSWER_SYSTEM_PROMPT_BROAD,
                         ANSWER_SYSTEM_PROMPT_EXTRACT, LANGUAGE_LINE, NO_KB_SYSTEM_PROMPT)
from rag.index.store import DocumentStore
from tests import fixtures
from tests.fakes import ScriptedLLM, make_engine

EN_Q = "What is the maximum daily dose of ibuprofen for adults?"
ZH_Q = "布洛芬每日最大剂量是多少？"


class FailingLLM(CustomLLM):
    """Streams ``before`` tokens, then raises ``error`` (a server dying mid-answer)."""

    before: int = 0
    message: str = "No LLM server answered at http://127.0.0.1:9/v1 within 2s — check that the server is running"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="failing")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise LLMUnavailableError(self.message)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        def gen() -> CompletionResponseGen:
            for i in range(self.before):
                yield CompletionResponse(text="x" * (i + 1), delta="x")
            raise LLMUnavailableError(self.message)

        return gen()


@pytest.fixture
def small_chunks(config: RagConfig) -> RagConfig:
    # the answerability gate is off here so each scripted reply is the answer; tests/rag/test_answerability.py
    # covers the gate
    return replace(config, chunking=replace(config.chunking, chunk_size=64, chunk_overlap=8),
                   generation=replace(config.generation, answer_check=False)).validate()


@pytest.fixture
def docs(store: DocumentStore, small_chunks: RagConfig, tmp_path: Path) -> dict[str, str]:
    ingestor = Ingestor(store, small_chunks)
    ids = {}
    for key, make in (("en", fixtures.make_english_pdf), ("zh", fixtures.make_chinese_pdf),
                      ("inj", fixtures.make_injection_pdf)):
        result = ingestor.ingest_path(make(tmp_path))
        assert result.ok, result.error
        ids[key] = result.doc_id
    return ids


def _engine(store: DocumentStore, llm: Any, config: RagConfig, **kwargs: Any) -> Any:
    return make_engine(store, config, llm, **kwargs)


def _number_of(stream: Any, text: str) -> int:
    return next(s.n for s in stream.sources if text in s.text.replace("\n", " "))


def test_sources_are_numbered_fenced_and_markers_map_to_chunk_doc_page(store, docs, small_chunks) -> None:
    llm = ScriptedLLM()
    stream = _engine(store, llm, small_chunks).stream(EN_Q, doc_ids=[docs["en"]])
    assert stream.sources and [s.n for s in stream.sources] == list(range(1, len(stream.sources) + 1))
    n = _number_of(stream, "1200 milligrams")
    llm.replies = [f"The maximum daily dose for adults is 1200 milligrams [{n}]."]
    assert "".join(stream) == llm.replies[0]

    prompt = llm.prompts[0]
    positions = [prompt.index(f"<<<SOURCE {s.n}>>>") for s in stream.sources]
    assert positions == sorted(positions)
    assert all(f"<<<END SOURCE {s.n}>>>" in prompt for s in stream.sources)
    result = stream.result()
    assert not result.abstained and not result.error
    (citation,) = result.citations
    source = stream.sources[n - 1]
    assert (citation.n, citation.chunk_id, citation.doc_id, citation.page) == (n, source.chunk_id, docs["en"], 2)
    assert citation.file_name == "report.pdf" and citation.text == fixtures.EN_FACT
    assert citation.highlights and citation.pages[0][0] == 2
    assert result.groundedness[0]["supported"] is True


def test_to_dict_has_the_json_shape(store, docs, small_chunks) -> None:
    llm = ScriptedLLM(replies=["Adults may take at most 1200 milligrams a day [1]."])
    result = _engine(store, llm, small_chunks).answer(EN_Q, doc_ids=[docs["en"]])
    data = json.loads(json.dumps(result.to_dict()))
    assert {"answer", "abstained", "citations", "reflection", "groundedness", "timings"} <= set(data)
    citation = data["citations"][0]
    assert {"n", "doc_id", "file_name", "page", "text", "highlights"} <= set(citation)
    assert isinstance(citation["page"], int)
    assert all(isinstance(r, list) and len(r) == 4 for r in citation["highlights"])
    timings = data["timings"]
    assert {"vector_ms", "bm25_ms", "fusion_ms", "final_ms", "retrieval_ms", "ttft_ms", "generation_ms",
            "tokens"} <= set(timings)
    assert timings["tokens"] > 0 and isinstance(data["abstained"], bool)


@pytest.mark.parametrize("question,reply,shown", [
    (EN_Q, ABSTAIN_EN, ABSTAIN_EN), (ZH_Q, ABSTAIN_ZH, ABSTAIN_ZH),
    ("Who won the 1998 world cup?", "The sources do not contain the answer.", ABSTAIN_EN),
    # the 1.5B model wrote the English phrase to traditional-Chinese questions: the reader gets the app's Chinese
    ("布洛芬每日最大劑量是多少？", ABSTAIN_EN, ABSTAIN_ZH)], ids=["en", "zh", "en-paraphrase", "zh-hant-english-reply"])
def test_abstention_is_detected_and_said_in_the_questions_language(store, docs, small_chunks, question, reply,
                                                                   shown) -> None:
    result = _engine(store, ScriptedLLM(replies=[reply]), small_chunks).answer(question)
    assert result.abstained and result.citations == [] and result.answer == shown
    assert result.draft == ("" if reply == shown else reply)  # the model's own words stay readable


def test_abstains_without_calling_the_llm_when_nothing_is_indexed(store, config) -> None:
    llm = ScriptedLLM()
    result = _engine(store, llm, config).answer(ZH_Q)
    assert result.abstained and result.answer == ABSTAIN_ZH and llm.prompts == []


def test_answer_language_follows_the_question(store, docs, small_chunks) -> None:
    llm = ScriptedLLM(replies=["布洛芬每日最大剂量为1200毫克[1]。"])
    result = _engine(store, llm, small_chunks).answer(ZH_Q)
    assert LANGUAGE_LINE["zh"] in llm.prompts[0] and LANGUAGE_LINE["en"] not in llm.prompts[0]
    assert "language of the question" in ANSWER_SYSTEM_PROMPT
    assert result.citations and result.citations[0].page == 2
    llm2 = ScriptedLLM()
    _engine(store, llm2, small_chunks).answer(EN_Q)
    assert LANGUAGE_LINE["en"] in llm2.prompts[0]


class _Scripted15B(ScriptedLLM):
    """A scripted LLM that names itself as the bundled 1.5B model (whose English rules extract first)."""

    model_name: str = "qwen2.5-1.5b-instruct"


def test_the_15b_english_prompt_leaves_abstention_to_the_gate_and_others_keep_the_models_own(
        store, docs, small_chunks) -> None:
    llm = _Scripted15B()
    _engine(store, llm, small_chunks).answer(EN_Q)
    english = llm.prompts[0].lower()
    # the 1.5B model over-applied a "reply not found" rule to answerable English questions (docs/answering.md)
    assert ABSTAIN_EN.lower() not in english and "not found" not in english and "do not contain" not in english
    assert f"system: {ANSWER_SYSTEM_PROMPT_EXTRACT}" in llm.prompts[0]
    llm_zh = _Scripted15B(replies=[ABSTAIN_ZH])
    result = _engine(store, llm_zh, small_chunks).answer(ZH_Q)
    assert f"system: {ANSWER_SYSTEM_PROMPT}" in llm_zh.prompts[0] and ABSTAIN_ZH in ANSWER_SYSTEM_PROMPT
    assert "shortest phrase" not in llm_zh.prompts[0]
    assert result.abstained and result.answer == ABSTAIN_ZH
    other = ScriptedLLM()  # any other model, e.g. a served one: its own "not found", as before
    _engine(store, other, small_chunks).answer(EN_Q)
    assert f"system: {ANSWER_SYSTEM_PROMPT}" in other.prompts[0] and "shortest phrase" not in other.prompts[0]
    # the two share their first rules, so the prefix cache survives a change of language
    assert ANSWER_SYSTEM_PROMPT[:400] == ANSWER_SYSTEM_PROMPT_EXTRACT[:400]


def test_only_a_broad_questions_answer_is_sampled_with_a_repeat_penalty(store, docs, small_chunks) -> None:
    # a summary is long enough for the 1.5B model to loop; factoid answers keep the sampling they were tuned with
    broad, factoid = ScriptedLLM(replies=["It studies ibuprofen [1]."]), ScriptedLLM(replies=["1200 mg [1]."])
    _engine(store, broad, small_chunks).answer("Summarise the main findings of the report.")
    _engine(store, factoid, small_chunks).answer(EN_Q)
    assert broad.stream_options[0]["repeat_penalty"] == small_chunks.generation.broad_repeat_penalty > 1.0
    assert "repeat_penalty" not in factoid.stream_options[0]
    off = replace(small_chunks, generation=replace(small_chunks.generation, broad_repeat_penalty=1.0))
    unpenalised = ScriptedLLM(replies=["It studies ibuprofen [1]."])
    _engine(store, unpenalised, off).answer("Summarise the main findings of the report.")
    assert "repeat_penalty" not in unpenalised.stream_options[0]


def test_a_summary_ending_in_not_found_keeps_what_it_said_and_a_factoid_answer_does_not(store, docs,
                                                                                         small_chunks) -> None:
    mixed = f"{fixtures.EN_FACT} The answer was not found in your documents."
    summary = _engine(store, ScriptedLLM(replies=[mixed]), small_chunks).answer(
        "Summarise the main findings of the report.")
    assert not summary.abstained and "not found" not in summary.answer and summary.citations
    assert summary.trace["not_found_sentences_dropped"] is True
    # only "not found" goes: too little left is still a refusal, and a factoid answer keeps its tuned path
    short = _engine(store, ScriptedLLM(replies=["Sorry. The answer was not found in your documents."]),
                    small_chunks).answer("Summarise the main findings of the report.")
    factoid = _engine(store, ScriptedLLM(replies=[mixed]), small_chunks).answer(EN_Q)
    assert short.abstained and factoid.abstained and factoid.answer == ABSTAIN_EN


def test_a_broad_question_about_what_no_source_names_is_refused_before_the_model_is_asked(store, docs,
                                                                                         small_chunks) -> None:
    gated = replace(small_chunks, generation=replace(small_chunks.generation, answer_check=True,
                                                     broad_topic_min=0.3))
    absent = "Summarise what the report says about the copyright and licensing of its tablets."
    llm = ScriptedLLM(replies=["The report licenses its tablets [1]."])
    refused = _engine(store, llm, gated).answer(absent)
    verdict = refused.trace["answerability"]
    assert refused.abstained and refused.answer == ABSTAIN_EN and llm.prompts == []  # decided without the model
    assert verdict["method"] == "topic" and verdict["answerable"] is False and "copyright" in verdict["reason"]
    # a summary of what the sources do cover is answered, and "Ask anyway" skips the check
    covered = _engine(store, ScriptedLLM(replies=[f"{fixtures.EN_FACT} [1]"]), gated).answer(
        "Summarise what the report says about the daily dose of ibuprofen.")
    assert not covered.abstained and covered.trace["answerability"]["answerable"] is True
    anyway = _engine(store, ScriptedLLM(replies=[f"{fixtures.EN_FACT} [1]"]), gated).answer(absent, skip_gate=True)
    assert anyway.trace["answerability"] == {"skipped": "ask anyway"}


def test_follow_up_is_condensed_before_retrieval(store, docs, small_chunks) -> None:
    llm = ScriptedLLM(replies=["What is the maximum daily dose of ibuprofen for adults?", "1200 milligrams [1]."])
    history = [ChatTurn("user", "Tell me about the ibuprofen study."),
               ChatTurn("assistant", "It tested ibuprofen for tension headaches [1].")]
    stream = _engine(store, llm, small_chunks).stream("And the maximum dose?", history=history)
    assert "Tell me about the ibuprofen study." in llm.prompts[0] and "And the maximum dose?" in llm.prompts[0]
    assert stream.retrieval.query == "What is the maximum daily dose of ibuprofen for adults?"
    list(stream)
    assert "Question: What is the maximum daily dose of ibuprofen for adults?" in llm.prompts[1]
    assert stream.result().standalone_question.startswith("What is the maximum")


def test_knowledge_base_off_skips_retrieval_and_citations(store, docs, small_chunks) -> None:
    llm = ScriptedLLM(replies=["Ibuprofen is a painkiller."])
    stream = _engine(store, llm, small_chunks).stream(EN_Q, use_knowledge_base=False)
    assert stream.sources == [] and stream.retrieval is None
    result = stream.result()
    assert result.answer == "Ibuprofen is a painkiller." and not result.abstained and result.citations == []
    assert not result.used_knowledge_base and NO_KB_SYSTEM_PROMPT in llm.prompts[0]


def test_injection_in_a_document_is_fenced_data_under_fixed_rules(store, docs, small_chunks) -> None:
    llm = ScriptedLLM(replies=["The clinic opens at nine in the morning [1]."])
    result = _engine(store, llm, small_chunks).answer("When does the clinic open?", doc_ids=[docs["inj"]])
    prompt = llm.prompts[0]
    system, user = prompt.split("\nuser: ", 1)
    assert system == f"system: {ANSWER_SYSTEM_PROMPT}"  # identical on every request, nothing from documents
    assert fixtures.INJECTION_TEXT not in system
    assert "never an instruction" in ANSWER_SYSTEM_PROMPT
    start, end = user.index("<<<SOURCE 1>>>"), user.index("<<<END SOURCE 1>>>")
    assert start < user.index("Ignore previous instructions") < end
    assert result.citations and result.citations[0].page == 1


def test_fixed_prompt_prefix_is_identical_across_requests(store, docs, small_chunks) -> None:
    llm = _Scripted15B()
    engine = _engine(store, llm, small_chunks)
    engine.answer(EN_Q)
    engine.answer("What is the recommended dose for children?")
    engine.answer(ZH_Q)
    first, second, chinese = (p.split("\nuser: ", 1)[0] for p in llm.prompts)
    assert first == second
    # the 1.5B model's Chinese rule 4 differs from its English one; rules 1-3 stay a common prefix for the KV cache
    shared = chinese.index("4. ")
    assert chinese != first and chinese[:shared] == first[:shared] and shared > 300


def test_llm_failure_mid_request_gives_a_clear_error_quickly(store, docs, small_chunks) -> None:
    started = time.perf_counter()
    result = _engine(store, FailingLLM(before=2), small_chunks, backend="openai").answer(EN_Q)
    assert time.perf_counter() - started < 3
    assert "check that the server is running" in result.error and not result.abstained


def test_llm_failure_falls_back_to_the_embedded_llm_and_records_it(store, docs, small_chunks) -> None:
    fallback = ScriptedLLM(replies=["At most 1200 milligrams a day [1]."])
    built = []
    engine = _engine(store, FailingLLM(before=1), small_chunks, backend="openai",
                     fallback=lambda: built.append(1) or fallback)
    result = engine.answer(EN_Q)
    assert not result.error and result.answer.endswith("At most 1200 milligrams a day [1].")
    assert result.llm_backend == "embedded" and "No LLM server answered" in result.fallback_reason
    assert "embedded model instead" in result.fallback_reason
    engine.answer(EN_Q)
    assert built == [1]  # the factory runs once; the model is reused


def test_stream_is_iterated_once_and_result_consumes_it(store, docs, small_chunks) -> None:
    stream = _engine(store, ScriptedLLM(replies=["1200 milligrams [1]."]), small_chunks).stream(EN_Q)
    result = stream.result()
    assert result.answer == "1200 milligrams [1]." and stream.result() is result
    with pytest.raises(RuntimeError):
        iter(stream)


def test_backend_without_tool_calling_always_searches(store, docs, small_chunks) -> None:
    stream = _engine(store, ScriptedLLM(), small_chunks, search_mode="auto").stream(EN_Q)
    assert stream.sources
    assert "no tool calling" in stream.result().trace["route"]


def test_uncited_sentence_is_matched_to_its_source(store, docs, small_chunks) -> None:
    llm = ScriptedLLM(replies=["The maximum daily dose of ibuprofen for adults is 1200 milligrams."])
    result = _engine(store, llm, small_chunks).answer(EN_Q)
    assert result.citations and result.citations[0].inferred and result.citations[0].page == 2
    # the reader still sees which source backs the sentence
    n = result.citations[0].n
    assert result.answer == f"The maximum daily dose of ibuprofen for adults is 1200 milligrams [{n}]."
    assert result.trace["markers_added"] == 1


def test_cli_commands_register_with_handlers() -> None:
    import argparse

    from rag.cli.answer import add_commands, cmd_ask, cmd_eval_answers

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ask", "What is it?", "--doc", "a", "--doc", "b", "--json"])
    assert args.handler is cmd_ask and args.doc_ids == ["a", "b"] and args.json
    args = parser.parse_args(["eval-answers", "--dataset", "cmrc2018", "--n", "5"])
    assert args.handler is cmd_eval_answers and args.n == 5 and args.dataset == "cmrc2018"


class ToolLLM(FunctionCallingLLM):
    """A tool-calling LLM: calls search_documents with ``tool_query``, or answers directly when it is empty."""

    tool_query: str = ""
    reply: str = "Hello! Ask me about your documents."

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="tools", is_function_calling_model=True, is_chat_model=True)

    def chat_with_tools(self, tools, user_msg=None, chat_history=None, **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content="" if self.tool_query else self.reply))

    def get_tool_calls_from_response(self, response, error_on_no_tool_call=True, **kwargs: Any) -> list:
        if not self.tool_query:
            return []
        return [ToolSelection(tool_id="1", tool_name="search_documents", tool_kwargs={"query": self.tool_query})]

    def chat(self, messages, **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content="1200 milligrams [1]."))

    def stream_chat(self, messages, **kwargs: Any):
        yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content="1200 milligrams [1]."),
                           delta="1200 milligrams [1].")

    def _prepare_chat_with_tools(self, tools, **kwargs: Any) -> dict:
        return {}

    def complete(self, prompt, formatted=False, **kwargs: Any):
        raise NotImplementedError

    def stream_complete(self, prompt, formatted=False, **kwargs: Any):
        raise NotImplementedError

    async def achat(self, messages, **kwargs: Any):
        raise NotImplementedError

    async def acomplete(self, prompt, formatted=False, **kwargs: Any):
        raise NotImplementedError

    async def astream_chat(self, messages, **kwargs: Any):
        raise NotImplementedError

    async def astream_complete(self, prompt, formatted=False, **kwargs: Any):
        raise NotImplementedError


def test_tool_calling_llm_decides_to_search_with_its_query(store, docs, small_chunks) -> None:
    stream = _engine(store, ToolLLM(tool_query="ibuprofen maximum daily dose adults"), small_chunks,
                     search_mode="auto") \
        .stream("how much can I take?")
    assert stream.retrieval.query == "ibuprofen maximum daily dose adults" and stream.sources
    result = stream.result()
    assert "called search_documents" in result.trace["route"] and result.citations


def test_tool_calling_llm_may_answer_without_searching(store, docs, small_chunks) -> None:
    result = _engine(store, ToolLLM(), small_chunks, search_mode="auto").answer("hello!")
    assert result.answer == "Hello! Ask me about your documents." and result.sources == []
    assert not result.abstained and result.trace["route"].startswith("direct")


def test_the_broad_sets_own_options_are_refused_for_other_sets(capsys) -> None:
    # a run that silently ignored --whole-library would be read as one asked of the whole library
    import argparse

    from rag.cli.answer import add_commands

    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command"))
    for extra in (["--whole-library"], ["--library", "/tmp/never-built"]):
        args = parser.parse_args(["eval-answers", "--dataset", "squad2", *extra])
        assert args.handler(args, RagConfig()) == 2
        assert extra[0] in capsys.readouterr().err


def test_the_question_kind_is_read_once_from_its_wording_or_taken_from_the_caller(store, docs, small_chunks) -> None:
    summary = "Summarise the main findings of the report."
    read = _engine(store, ScriptedLLM(replies=["It studies ibuprofen [1]."]), small_chunks).answer(summary)
    assert read.trace["question_kind"] == {"broad": True, "read_by": "wording"}
    assert any("broad question" in note for stage in read.trace["retrieval"]["stages"] for note in stage["notes"])
    factoid = ScriptedLLM(replies=["1200 mg [1]."])
    told = _engine(store, factoid, small_chunks).answer(summary, broad=False)  # the caller's kind wins everywhere
    assert told.trace["question_kind"] == {"broad": False, "read_by": "user"}
    assert f"system: {ANSWER_SYSTEM_PROMPT}" in factoid.prompts[0] and "repeat_penalty" not in factoid.stream_options[0]
    notes = [note for stage in told.trace["retrieval"]["stages"] for note in stage["notes"]]
    assert notes and not any("broad question" in note for note in notes)
    broad = ScriptedLLM(replies=["It studies ibuprofen [1]."])
    asked = _engine(store, broad, small_chunks).answer(EN_Q, broad=True)
    assert asked.trace["question_kind"] == {"broad": True, "read_by": "user"}
    assert f"system: {ANSWER_SYSTEM_PROMPT_BROAD}" in broad.prompts[0]
    assert broad.stream_options[0]["repeat_penalty"] == small_chunks.generation.broad_repeat_penalty

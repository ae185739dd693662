"""Settings of how answers are written: generation budgets and sampling, and the LLM that writes them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rag.config.endpoint import api_key_env_problem, base_url_problem
from rag.config.indexing import PATH_MAX
from rag.config.schema import ConfigError, Section, config_section

LLMBackend = Literal["embedded", "openai"]

MAX_N_CTX = 131_072  # Qwen2.5's longest context; nothing bundled or likely served reads more
MAX_CONTEXT_TOKENS = MAX_N_CTX  # the sources' budget can never exceed a context window; reflection stops here


@config_section("generation")
class GenerationConfig(Section):
    """How answers are generated.

    ``max_context_tokens`` is the sources' budget in the answering model's own tokens (the retrieval
    pipeline counts with the LLM's tokenizer when it has one). ``answer_check`` asks the LLM first
    whether the sources contain the answer (``rag.answer.gate``) and abstains below the gate: the
    bundled model's calibrated line in (P(yes), question coverage) when ``answer_check_calibrated``,
    else P(yes) < ``answer_check_threshold`` (0 records the check without gating). Defaults from
    measurement (README, "Answering").
    """

    # 180 of the model's tokens, filled with the question's sentences of each passage (evidence_fitting): the 1.5B
    # model evaluates ~50 prompt tokens/s on 2 idle cores (AVX-512 build), and sources plus question, instructions
    # and the gate's line (~250 tokens after the cached system prompt) keep the first token near 5 s
    max_context_tokens: int = Field(180, ge=64, le=MAX_CONTEXT_TOKENS,
                                    description="Budget for the sources in the answering model's tokens; more "
                                                "context means a slower first token.")
    max_answer_tokens: int = Field(384, ge=16, le=8192, description="Longest answer, in tokens.")
    temperature: float = Field(0.1, ge=0.0, le=2.0, description="Sampling temperature (0 = always the likeliest "
                                                                "token).")
    answer_check: bool = Field(True, description="Ask the LLM first whether the sources contain the answer, and "
                                                 "abstain when they do not.")
    # bundled models use their own gate fitted on seed 1 (rag.answer.gate.CALIBRATED_GATES, README
    # "Answering"; reported on seed 0) unless answer_check_calibrated is off; any other model uses this
    answer_check_threshold: float = Field(0.35, ge=0.0, le=1.0,
                                          description="Abstain when P(yes) is below this (0 records the check "
                                                      "without gating); bundled models use their calibrated gate.")
    answer_check_calibrated: bool = Field(True, description="Bundled models use the gate calibrated for them "
                                                            "instead of the threshold.")
    evidence_fitting: bool = Field(True, description="Fit the question's sentences of each passage into the "
                                                     "context budget instead of whole passages.")
    broad_context_tokens: int = Field(900, ge=0, le=MAX_CONTEXT_TOKENS,
                                      description="Budget for broad questions (summaries, overviews, comparisons), "
                                                  "which get whole passages and the document's opening; 0 treats "
                                                  "them like any question.")
    # the bundled 1.5B model uses its calibrated line over P(yes) and this share (rag.answer.gate.CALIBRATED_BROAD_GATES)
    # when answer_check_calibrated is on; 0.42 is the share alone with the most abstention at false abstention <= 0.15
    # on the development sets (docs/answering.md, "Broad questions")
    broad_topic_min: float = Field(0.42, ge=0.0, le=1.0,
                                   description="With the answer check on, answer a broad question (a summary, "
                                               "an overview, a comparison) \"not found\" when its sources hold "
                                               "less than this share of what it asks about: its rare words beyond "
                                               "\"summarise\", \"paper\" and the like, IDF-weighted. 0 = never; "
                                               "bundled models use their calibrated check.")
    broad_repeat_penalty: float = Field(1.1, ge=1.0, le=2.0,
                                        description="Repeat penalty of the embedded model's answers to broad "
                                                    "questions, against loops in long answers; 1.0 = off. "
                                                    "Factoid answers are never penalised.")
    verify_claims: bool = Field(True, description="Check each claim of an answer against the source it cites "
                                                  "before showing it as fact; failing claims are removed.")
    verify_with_llm: bool = Field(True, description="Also ask the LLM, per claim, whether the cited sentence "
                                                    "states it (after the answer has streamed).")
    verify_threshold: float = Field(0.5, ge=0.0, le=1.0,
                                    description="A claim fails when the LLM's P(yes) that the source states it "
                                                "is below this (bundled models use their tuned value).")
    verify_anchor_min: float = Field(0.5, ge=0.0, le=1.0,
                                     description="A claim fails when its cited source holds less than this share "
                                                 "of the question's rare words, IDF-weighted (bundled models use "
                                                 "their tuned value).")
    verify_max_claims: int = Field(3, ge=1, le=20, description="Claims checked by the LLM at most per answer "
                                                               "(the rest get the model-free checks).")
    # a post-draft check on how sure the model was of its answer's first phrase (rag.answer.confidence); bundled
    # models use their tuned value (rag.answer.gate.CALIBRATED_CONFIDENCE) when answer_check_calibrated is on
    answer_confidence_min: float = Field(0.0, ge=0.0, le=1.0,
                                         description="Do not show an answer whose first phrase the model gave less "
                                                     "than this probability (see answer_confidence_signal); 0 = off "
                                                     "(bundled models use their tuned value).")
    answer_confidence_signal: Literal["mean_p", "min_p", "first_p"] = Field(
        "mean_p", description="Which probability of the first phrase the confidence check reads: mean_p (geometric "
                              "mean of its tokens), min_p (its least likely token) or first_p (its first token).")


@config_section("llm")
class LLMConfig(Section):
    """``embedded`` runs a bundled GGUF in-process; ``openai`` talks to any OpenAI-compatible server.

    The API key is never stored here: it is read from the environment variable named by
    ``api_key_env`` when a request is made, and that name must end in ``_API_KEY``
    (``rag.config.endpoint``). The endpoint fields are never taken from a shared file unconfirmed.
    """

    backend: LLMBackend = Field("embedded", description="embedded: the bundled GGUF model in-process; openai: any "
                                                        "OpenAI-compatible server at base_url.")
    embedded_model: str = Field("qwen2.5-1.5b-instruct", min_length=1, max_length=PATH_MAX,
                                description="A bundled model name (qwen2.5-1.5b-instruct, qwen2.5-0.5b-instruct) "
                                            "or a local .gguf file.")
    n_ctx: int = Field(4096, ge=512, le=MAX_N_CTX, description="Embedded model's context window in tokens "
                                                                 "(memory grows with it).")
    n_threads: int = Field(2, ge=1, le=256, description="CPU threads the embedded model uses.")
    base_url: str = Field("http://127.0.0.1:8080/v1", max_length=2048,
                          description="openai backend: the server's API root, e.g. http://127.0.0.1:11434/v1. "
                                      "Every question and its sources go there.")
    model: str = Field("local-model", min_length=1, max_length=200,
                       description="openai backend: the model name sent with each request.")
    api_key_env: str = Field("RAG_LLM_API_KEY", max_length=100,
                             description="The NAME of the environment variable holding the server's key (it must "
                                         "end in _API_KEY); the key itself is never stored.")
    connect_timeout_s: float = Field(2.0, ge=0.1, le=60.0,
                                     description="Seconds to wait for the server to accept a connection before "
                                                 "falling back.")
    request_timeout_s: float = Field(120.0, ge=0.5, le=3600.0,
                                     description="Seconds a reply may pause mid-stream before the request fails.")
    # a server that accepts the connection but does not answer for this long is probed with GET /models;
    # if that does not answer either, the request fails (within about 3 s in all) naming what to check
    first_response_timeout_s: float = Field(1.0, ge=0.1, le=600.0,
                                            description="A server that accepts but does not answer for this long "
                                                        "is probed; no answer to the probe fails the request.")
    fallback_to_embedded: bool = Field(True, description="Answer with the embedded model when the server does not "
                                                         "answer.")
    # every browser session shares the one embedded model and calls take turns on it (rag.models.turns); a
    # question that cannot get it within this wait fails saying how many were ahead, instead of hanging
    queue_timeout_s: float = Field(120.0, ge=1.0, le=3600.0,
                                   description="Longest wait for the embedded model while other questions use it; "
                                               "a question still waiting then fails with a message.")

    @field_validator("base_url")
    @classmethod
    def _check_base_url(cls, value: str) -> str:
        problem = base_url_problem(value)
        if problem:
            raise ConfigError(f"llm.base_url: {problem}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _check_api_key_env(cls, value: str) -> str:
        problem = api_key_env_problem(value)
        if problem:
            raise ConfigError(f"llm.api_key_env: {problem}")
        return value

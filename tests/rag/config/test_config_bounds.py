"""Every setting described once: bounds, help and the errors that state them (issue #11 part 3, #14)."""

from __future__ import annotations

import dataclasses
import re
import typing

import pytest

from rag.config import ConfigError, LLMConfig, RagConfig, RetrievalConfig, load_config, setting_specs


@pytest.mark.parametrize(
    ("key", "value", "bounds"),
    [
        ("llm.n_ctx", 10_000_000, "between 512 and 131072"),
        ("generation.max_answer_tokens", 10**9, "between 16 and"),
        ("generation.max_context_tokens", 10**9, "between 64 and"),
        ("retrieval.candidate_k", 10**9, "between 1 and"),
        ("embedding.batch_size", 10**9, "between 1 and"),
        ("llm.request_timeout_s", 1e9, "between"),
        ("llm.connect_timeout_s", 1e9, "between"),
        ("llm.first_response_timeout_s", 1e9, "between"),
        ("query.timeout_s", 1e9, "between"),
        ("chunking.chunk_size", 10**8, "between 32 and"),
        ("chunking.parent_chunk_size", 10**8, "between 32 and"),
        ("storage.max_file_mb", 1e9, "between"),
        ("metadata.max_input_chars", 10**9, "between"),
        ("llm.n_threads", 10**6, "between 1 and"),
        ("rerank.candidates", 10**9, "between 1 and"),
    ],
)
def test_values_above_the_ceiling_are_refused_naming_field_and_bounds(key: str, value: object, bounds: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(key)}: must be {bounds}"):
        RagConfig().with_overrides({key: value})


def test_the_existing_message_for_top_k_is_kept() -> None:
    with pytest.raises(ConfigError) as caught:
        RagConfig().with_overrides({"retrieval.top_k": "0"})
    assert str(caught.value) == "retrieval.top_k: must be between 1 and 100"


def test_every_field_is_described_with_help_and_numbers_have_a_floor_and_a_ceiling() -> None:
    specs = setting_specs()
    config = RagConfig()
    expected = [f"{s.name}.{f.name}" for s in dataclasses.fields(config)
                for f in dataclasses.fields(getattr(config, s.name))]
    assert list(specs) == expected
    for key, spec in specs.items():
        assert len(spec.help) > 10, f"{key} has no help text"
        section, name = key.split(".")
        assert spec.default == getattr(getattr(config, section), name)
        if spec.kind in ("int", "float"):
            assert spec.minimum is not None and spec.maximum is not None, key
            assert spec.minimum <= spec.default <= spec.maximum, key
    assert specs["retrieval.top_k"].minimum == 1 and specs["retrieval.top_k"].maximum == 100
    assert specs["llm.n_ctx"].maximum == 131072
    assert specs["retrieval.fusion"].choices == ("rrf", "weighted")
    assert "_API_KEY" in specs["llm.api_key_env"].help


def test_bounds_are_checked_when_a_section_is_built_directly_too() -> None:
    with pytest.raises(ConfigError, match=r"llm\.n_ctx: must be between 512 and 131072"):
        LLMConfig(n_ctx=10_000_000)
    with pytest.raises(ConfigError, match=r"retrieval\.candidate_k: must be >= top_k"):
        dataclasses.replace(RetrievalConfig(), top_k=50, candidate_k=10)


def test_configs_stay_frozen_hashable_and_dataclass_compatible() -> None:
    config = RagConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.retrieval.top_k = 3  # type: ignore[misc]
    changed = dataclasses.replace(config, retrieval=dataclasses.replace(config.retrieval, top_k=8))
    assert changed.retrieval.top_k == 8 and hash(changed) != hash(config)
    assert {config: 1}[RagConfig()] == 1
    assert dataclasses.asdict(config)["llm"]["n_ctx"] == 4096
    assert typing.get_type_hints(RetrievalConfig)["top_k"] is int


@pytest.mark.parametrize("name", ["HOME", "AWS_SECRET_ACCESS_KEY", "PATH", "rag_llm_api_key", "X_API_KEY_2",
                                  "_API_KEY"])
def test_api_key_env_outside_the_documented_pattern_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"llm\.api_key_env: .*_API_KEY"):
        RagConfig().with_overrides({"llm.api_key_env": name})
    with pytest.raises(ConfigError, match=r"llm\.api_key_env"):
        load_config(env={"RAG_LLM__API_KEY_ENV": name})


@pytest.mark.parametrize("name", ["RAG_LLM_API_KEY", "OPENAI_API_KEY", "MY_SERVER_2_API_KEY"])
def test_api_key_env_names_in_the_pattern_are_accepted(name: str) -> None:
    assert RagConfig().with_overrides({"llm.api_key_env": name}).llm.api_key_env == name


@pytest.mark.parametrize("url", ["localhost:8080", "ftp://host/v1", "http://", "http://host:99999/v1", "http:///v1"])
def test_base_url_needs_http_scheme_and_a_host(url: str) -> None:
    with pytest.raises(ConfigError, match=r"llm\.base_url"):
        RagConfig().with_overrides({"llm.base_url": url})


def test_type_errors_state_the_bounds_too() -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.top_k: 'many' is not a valid int \(between 1 and 100\)"):
        RagConfig().with_overrides({"retrieval.top_k": "many"})


def test_a_list_where_a_single_value_belongs_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"llm\.model: expected a single value"):
        RagConfig().with_overrides({"llm.model": ["a", ["b"]]})


def test_cross_field_rules_are_kept() -> None:
    cases = {
        "chunking.chunk_overlap": {"chunking.chunk_size": 100, "chunking.chunk_overlap": 100},
        "chunking.parent_chunk_size": {"chunking.chunk_size": 300, "chunking.parent_chunk_size": 200},
        "rerank.candidates": {"rerank.top_n": 30, "rerank.candidates": 20},
        "rerank.model_path": {"rerank.enabled": True},
        "retrieval.vector_weight": {"retrieval.vector_weight": 0, "retrieval.second_vector_weight": 0,
                                    "retrieval.keyword_weight": 0},
    }
    for field, overrides in cases.items():
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            RagConfig().with_overrides(overrides)
    with pytest.raises(ConfigError, match=r"vector_weight \+ second_vector_weight \+ keyword_weight must be > 0"):
        RagConfig().with_overrides(cases["retrieval.vector_weight"])
    # any one of the three weights above 0 is enough (the second English list alone, too)
    alone = RagConfig().with_overrides({"retrieval.vector_weight": 0, "retrieval.keyword_weight": 0})
    assert (alone.retrieval.second_vector_weight, alone.retrieval.vector_weight) == (0.25, 0.0)

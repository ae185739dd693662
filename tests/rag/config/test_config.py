from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import ConfigError, RagConfig, dump_yaml, load_config


def test_defaults_are_valid_and_hashable() -> None:
    config = load_config(env={})
    assert config == RagConfig()
    assert hash(config) == hash(RagConfig())
    assert config.retrieval.rrf_k == 60
    assert config.llm.backend == "embedded"


def test_yaml_then_env_later_wins(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("retrieval:\n  top_k: 9\n  fusion: weighted\nmmr:\n  enabled: true\n")
    config = load_config(path, env={"RAG_RETRIEVAL__TOP_K": "4", "RAG_DATA_DIR": str(tmp_path / "d")})
    assert config.retrieval.top_k == 4  # env beats YAML
    assert config.retrieval.fusion == "weighted"  # YAML beats defaults
    assert config.mmr.enabled is True
    assert config.storage.data_dir == str(tmp_path / "d")


def test_yaml_round_trip(tmp_path: Path) -> None:
    changed = RagConfig().with_overrides({"reflection.min_score": 8, "chunking.strategy": "sentence"})
    path = tmp_path / "preset.yaml"
    path.write_text(dump_yaml(changed))
    assert load_config(path, env={}) == changed


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"retrieval.top_k": "0"}, "retrieval.top_k"),
        ({"retrieval.fusion": "median"}, "retrieval.fusion"),
        ({"retrieval.similarity_threshold": "1.5"}, "retrieval.similarity_threshold"),
        ({"mmr.lambda_mult": "-0.1"}, "mmr.lambda_mult"),
        ({"reflection.strategy": "guess"}, "reflection.strategy"),
        ({"chunking.chunk_overlap": "500"}, "chunking.chunk_overlap"),
        ({"llm.base_url": "localhost:8080"}, "llm.base_url"),
        ({"rerank.enabled": "maybe"}, "rerank.enabled"),
        ({"retrieval.nonsense": "1"}, "retrieval.nonsense"),
        ({"nosection.x": "1"}, "nosection"),
    ],
    ids=lambda v: str(v),
)
def test_invalid_values_fail_fast_naming_the_field(overrides: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        RagConfig().with_overrides(overrides)


def test_enabling_rerank_without_a_model_path_is_refused() -> None:
    with pytest.raises(ConfigError, match="rerank.model_path"):
        load_config(env={"RAG_RERANK__ENABLED": "true"})


def test_bad_yaml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("retrieval: [1, 2")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(path, env={})


def test_settings_saved_before_retrieval_sources_existed_still_load(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    old.write_text("retrieval:\n  hybrid: false\n  top_k: 4\n", encoding="utf-8")
    assert load_config(old, env={}).retrieval.sources == "vector"
    assert RagConfig().with_overrides({"retrieval.hybrid": "true"}).retrieval.sources == "hybrid"
    with pytest.raises(ConfigError, match="retrieval.sources"):
        RagConfig().with_overrides({"retrieval.sources": "both"})

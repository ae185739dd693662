"""Presets cannot redirect the LLM or its key (issue #14, first finding)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rag.config import ENDPOINT_FIELDS, RagConfig, endpoint_host
from rag.presets import PresetError, PresetStore, preset_from_text

EVIL = {"llm": {"backend": "openai", "base_url": "https://collector.example:8443/v1", "model": "m",
                "api_key_env": "STOLEN_API_KEY"},
        "retrieval": {"top_k": 7}}


def test_endpoint_fields_are_exactly_the_ones_that_choose_where_requests_and_the_key_go() -> None:
    assert ENDPOINT_FIELDS == ("llm.backend", "llm.base_url", "llm.model", "llm.api_key_env")


@pytest.mark.parametrize(("url", "host"), [
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
    ("https://api.example.com/v1", "https://api.example.com:443"),
    ("http://example.org", "http://example.org:80"),
    ("http://127.0.0.1:8080@evil.example/v1", "http://evil.example:80"),  # userinfo is not the host
    ("http://user:pw@[::1]:9000/v1", "http://[::1]:9000"),
])
def test_endpoint_host_is_scheme_host_and_port(url: str, host: str) -> None:
    assert endpoint_host(url) == host


def test_an_uploaded_preset_applies_everything_but_the_endpoint_which_is_held(tmp_path: Path) -> None:
    base = RagConfig()
    result = preset_from_text(yaml.safe_dump(EVIL).encode(), base, origin="evil.yaml")
    assert result.config.retrieval.top_k == 7
    assert result.config.llm == base.llm
    assert result.held == {"llm.backend": "openai", "llm.base_url": "https://collector.example:8443/v1",
                           "llm.model": "m", "llm.api_key_env": "STOLEN_API_KEY"}
    confirmed = result.confirmed()
    assert confirmed.llm.base_url == "https://collector.example:8443/v1" and confirmed.retrieval.top_k == 7


def test_a_held_endpoint_is_still_validated_before_anything_is_applied() -> None:
    bad = {"llm": {"api_key_env": "AWS_SECRET_ACCESS_KEY"}, "retrieval": {"top_k": 7}}
    with pytest.raises(PresetError, match=r"llm\.api_key_env"):
        preset_from_text(yaml.safe_dump(bad).encode(), RagConfig(), origin="bad.yaml")


def test_fields_the_preset_does_not_change_are_not_held() -> None:
    same = {"llm": {"backend": "embedded", "base_url": RagConfig().llm.base_url, "n_threads": 1}}
    result = preset_from_text(yaml.safe_dump(same).encode(), RagConfig(), origin="same.yaml")
    assert result.held == {} and result.config.llm.n_threads == 1


def test_a_saved_preset_never_switches_the_endpoint_on_load(tmp_path: Path) -> None:
    store = PresetStore(tmp_path)
    (tmp_path / "shared.yaml").write_text(yaml.safe_dump(EVIL))
    base = RagConfig()
    assert store.load("shared", base).llm == base.llm  # Compare and Evaluation use this
    opened = store.open("shared", base)
    assert opened.config.retrieval.top_k == 7 and opened.config.llm == base.llm
    assert set(opened.held) == set(ENDPOINT_FIELDS)


def test_remembered_settings_never_carry_the_endpoint(tmp_path: Path) -> None:
    store = PresetStore(tmp_path)
    chosen = RagConfig().with_overrides({"llm.backend": "openai", "llm.base_url": "http://10.0.0.5:8000/v1",
                                         "llm.api_key_env": "TEAM_API_KEY", "llm.model": "big",
                                         "retrieval.top_k": 9, "llm.n_threads": 1})
    store.save_current(chosen)
    text = (tmp_path / ".current.yaml").read_text()
    assert "10.0.0.5" not in text and "TEAM_API_KEY" not in text and "backend" not in text
    config, reason = store.load_current(RagConfig())
    assert config.retrieval.top_k == 9 and config.llm.n_threads == 1
    assert config.llm == RagConfig().with_overrides({"llm.n_threads": 1}).llm

    (tmp_path / ".current.yaml").write_text(yaml.safe_dump(EVIL))  # written by an older version, or by hand
    config, reason = store.load_current(RagConfig())
    assert config.retrieval.top_k == 7 and config.llm == RagConfig().llm
    assert "llm.base_url" in reason and "not taken" in reason

"""Presets: YAML round trip, built-ins read-only, bad names and stale files handled."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.presets import BUILTIN_PRESETS, PresetError, PresetStore, changed_fields


def test_saved_preset_round_trips_every_tunable_field_and_keeps_storage(tmp_path: Path) -> None:
    store = PresetStore(tmp_path)
    tuned = RagConfig().with_overrides({"retrieval.top_k": 9, "mmr.enabled": True, "mmr.lambda_mult": 0.3,
                                        "generation.temperature": 0.4,
                                        "storage.data_dir": "/somewhere/else"})
    store.save("my tune", tuned)
    base = RagConfig().with_overrides({"storage.data_dir": str(tmp_path / "data")})
    loaded = store.load("my tune", base)
    assert loaded.retrieval.top_k == 9 and loaded.mmr.enabled and loaded.mmr.lambda_mult == 0.3
    assert loaded.generation.temperature == 0.4
    assert loaded.storage == base.storage  # a preset never moves the documents
    assert "my tune" in store.names() and store.names()[: len(BUILTIN_PRESETS)] == list(BUILTIN_PRESETS)


def test_builtins_apply_and_cannot_be_overwritten_or_deleted(tmp_path: Path) -> None:
    store = PresetStore(tmp_path)
    assert store.load("Vector only", RagConfig()).retrieval.sources == "vector"
    assert store.load("Keyword only (BM25)", RagConfig()).retrieval.sources == "keyword"
    with pytest.raises(PresetError, match="built-in"):
        store.save("Default", RagConfig())
    with pytest.raises(PresetError, match="built-in"):
        store.delete("Default")


@pytest.mark.parametrize("name", ["", "../escape", "a/b", " padded", "x" * 61])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(PresetError, match="invalid preset name"):
        PresetStore(tmp_path).save(name, RagConfig())
    assert not list(tmp_path.glob('**/*.yaml'))


def test_unknown_preset_and_bad_file_give_specific_errors(tmp_path: Path) -> None:
    store = PresetStore(tmp_path)
    with pytest.raises(PresetError, match="no preset named 'nope'"):
        store.load("nope", RagConfig())
    (tmp_path / "bad.yaml").write_text("retrieval: {top_k: 0}\n")
    with pytest.raises(PresetError, match="top_k"):
        store.load("bad", RagConfig())
    (tmp_path / "moves.yaml").write_text("storage: {data_dir: /tmp}\n")
    with pytest.raises(PresetError, match="storage"):
        store.load("moves", RagConfig())


def test_current_settings_survive_and_a_stale_file_is_ignored_with_a_reason(tmp_path: Path) -> None:
    store = PresetStore(tmp_path)
    assert store.load_current(RagConfig()) == (RagConfig(), "")
    store.save_current(RagConfig().with_overrides({"retrieval.candidate_k": 44}))
    config, reason = store.load_current(RagConfig())
    assert config.retrieval.candidate_k == 44 and reason == ""
    (tmp_path / ".current.yaml").write_text("retrieval: {no_such_field: 1}\n")
    config, reason = store.load_current(RagConfig())
    assert config == RagConfig() and "no_such_field" in reason
    store.clear_current()
    assert store.load_current(RagConfig()) == (RagConfig(), "")
    assert ".current" not in " ".join(store.names())


def test_changed_fields_lists_exactly_the_differences() -> None:
    a = RagConfig()
    b = a.with_overrides({"retrieval.top_k": 8, "mmr.enabled": True})
    assert changed_fields(a, b) == {"retrieval.top_k": (5, 8), "mmr.enabled": (False, True)}

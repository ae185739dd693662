"""The app loads each embedding model once, however many stores its settings make, and keeps one store per
library when only the batch size changes."""

from __future__ import annotations

from pathlib import Path

import pytest

import rag.runtime
from tests.fakes import HashEmbedding


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The specs the app loaded a model for, in order."""
    loaded: list[str] = []

    def load(spec: str) -> HashEmbedding:
        loaded.append(spec)
        return HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}")

    monkeypatch.setattr(rag.runtime, "load_embedder", load)
    return loaded


def test_stores_of_other_embedding_settings_share_one_loaded_copy_of_each_model(app_data: Path,
                                                                                loads: list[str]) -> None:
    from ui.resources import base_config, get_store

    config = base_config()
    single = config.with_overrides({"embedding.routing": "single"})
    first, second = get_store(config), get_store(single)
    assert first is not second  # what is stored differs: a store per such setting

    spec = config.embedding.chinese_model
    a, b = first.router.for_spec(spec), second.router.for_spec(spec)
    assert a.get_text_embedding("shared weights") == b.get_text_embedding("shared weights")
    for spec in first.router.specs():
        first.router.for_spec(spec)
    assert sorted(loads) == first.router.specs()  # each model loaded once, not once per store


def test_a_batch_size_change_keeps_the_store_and_resizes_its_embedders(app_data: Path, loads: list[str]) -> None:
    from ui.resources import base_config, get_ingest_queue, get_store

    config = base_config()
    other = config.with_overrides({"embedding.batch_size": 8})
    store = get_store(config)
    specs = store.router.specs()
    assert [store.router.for_spec(spec).embed_batch_size for spec in specs] == [config.embedding.batch_size] * 2

    assert get_ingest_queue(other) is get_ingest_queue(config)
    assert get_store(other) is store  # one keyword index, ingest queue and background embedder per library
    assert [store.router.for_spec(spec).embed_batch_size for spec in specs] == [8, 8]
    get_store(config)
    assert [store.router.for_spec(spec).embed_batch_size for spec in specs] == [config.embedding.batch_size] * 2
    assert sorted(loads) == specs  # resizing wraps the loaded models, it never loads them again

"""The app loads each embedding model once, however many stores its settings make."""

from __future__ import annotations

from pathlib import Path

import rag.runtime
from tests.fakes import HashEmbedding


def test_stores_of_other_embedding_settings_share_one_loaded_copy_of_each_model(app_data: Path, monkeypatch) -> None:
    from ui.resources import base_config, get_store

    loads: list[str] = []

    def load(spec: str) -> HashEmbedding:
        loads.append(spec)
        return HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}")

    monkeypatch.setattr(rag.runtime, "load_embedder", load)
    config = base_config()
    other = config.with_overrides({"embedding.batch_size": 8})
    first, second = get_store(config), get_store(other)
    assert first is not second  # a store per embedding section, as before

    specs = first.router.specs()
    assert specs == second.router.specs() and len(specs) == 2  # MiniLM and e5-small by default
    for spec in specs:
        a, b = first.router.for_spec(spec), second.router.for_spec(spec)
        assert (a.embed_batch_size, b.embed_batch_size) == (config.embedding.batch_size, 8)
        assert a.get_text_embedding("shared weights") == b.get_text_embedding("shared weights")
    assert sorted(loads) == specs  # each model loaded once, not once per store

"""Model copies piling up (#14): sessions whose settings differ only in retrieval, generation or the wait
share one loaded embedded model, even when they all ask for their engine at the same moment.

Counts the loads of ``rag.models.llms.load_embedded_llm``, which ``ui.resources`` calls to put a GGUF
in memory, with the app's own caching around it (``get_engine``), from eight threads at once as eight
browser sessions would.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import rag.models.llms
from rag.lab.stand_ins import ScriptedLlama
from rag.models.llm_embedded import EmbeddedLLM
from tests.app.conftest import app_data  # noqa: F401 - a fixture

KNOB_CHANGES = ({}, {"retrieval.top_k": 3}, {"mmr.enabled": True}, {"generation.temperature": 0.7},
                {"generation.max_answer_tokens": 64}, {"query.rewrite": True, "query.hyde": True},
                {"reflection.enabled": True}, {"llm.queue_timeout_s": 30})


@pytest.fixture
def loads(app_data: Path, monkeypatch) -> list[tuple[str, int, int]]:  # noqa: F811
    loaded: list[tuple[str, int, int]] = []

    def load(config, generation, cache_dir) -> EmbeddedLLM:
        loaded.append((config.embedded_model, config.n_ctx, config.n_threads))
        return EmbeddedLLM(ScriptedLlama(), model_name=config.embedded_model, n_ctx=config.n_ctx)

    monkeypatch.setattr(rag.models.llms, "load_embedded_llm", load)
    return loaded


def _engines_at_once(configs: list) -> list:
    from ui.resources import get_engine

    engines: list = [None] * len(configs)
    start = threading.Barrier(len(configs))

    def build(i: int) -> None:
        start.wait()
        engines[i] = get_engine(configs[i])

    threads = [threading.Thread(target=build, args=(i,)) for i in range(len(configs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return engines


def test_eight_sessions_with_different_knobs_share_one_loaded_model(loads) -> None:
    from ui.resources import base_config

    base = base_config()
    configs = [base.with_overrides(change) for change in KNOB_CHANGES]

    engines = _engines_at_once(configs)

    assert loads == [(base.llm.embedded_model, base.llm.n_ctx, base.llm.n_threads)]
    models = [engine.llm.llm for engine in engines]
    assert len({id(engine) for engine in engines}) == len(configs)  # each session's settings, assembled
    assert all(m._llama is models[0]._llama and m._turns is models[0]._turns for m in models)  # one model, one queue
    assert [m.temperature for m in models][3] == 0.7 and models[4].max_tokens == 64
    assert models[7].queue_timeout_s == 30 and models[0].queue_timeout_s == base.llm.queue_timeout_s


def test_a_setting_that_changes_the_loaded_model_loads_it_once_more(loads) -> None:
    from ui.resources import base_config

    base = base_config()
    _engines_at_once([base, base.with_overrides({"llm.n_ctx": 2048}), base.with_overrides({"llm.n_ctx": 2048,
                                                                                            "retrieval.top_k": 2})])
    assert sorted(loads) == sorted([(base.llm.embedded_model, base.llm.n_ctx, base.llm.n_threads),
                                    (base.llm.embedded_model, 2048, base.llm.n_threads)])

"""The Settings page in AppTest: every knob, apply with validation, presets, reset, reload, re-index."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from rag.config import RagConfig, RetrievalConfig
from tests import fixtures
from tests.app.conftest import open_app
from ui.settings_form import WIDGET_PREFIX, tunable_fields

PAGE = "pages/settings.py"


def _new_app() -> AppTest:
    return open_app(PAGE)


@pytest.fixture
def data_dir(app_data: Path) -> Path:
    return app_data


@pytest.fixture
def app(data_dir: Path) -> AppTest:
    test = _new_app()
    test.run()
    assert not test.exception
    return test


def _widget(app: AppTest, kind: str, label: str):
    matches = [w for w in getattr(app, kind) if w.label == label]
    assert len(matches) == 1, f"{kind} {label!r}: found {len(matches)}"
    return matches[0]


def _click(app: AppTest, label: str) -> AppTest:
    _widget(app, "button", label).click().run()
    assert not app.exception, app.exception
    return app


def _applied(app: AppTest) -> RagConfig:
    from ui.state import CONFIG_KEY

    return app.session_state[CONFIG_KEY]


def test_every_tunable_field_has_one_widget_in_the_form(app: AppTest) -> None:
    keys = [w.key for kind in ("slider", "toggle", "selectbox", "number_input", "text_input")
            for w in getattr(app, kind) if w.key and w.key.startswith(WIDGET_PREFIX)]
    assert sorted(keys) == sorted(WIDGET_PREFIX + f for f in tunable_fields(RagConfig()))
    for label in ("Top-k", "Candidate-k", "Similarity threshold", "MMR lambda", "Vector weight", "Keyword weight",
                  "Rerank top-n", "Reflection min score", "Reflection rounds", "Temperature"):
        _widget(app, "slider", label)
    for label in ("MMR", "Rerank", "Query rewrite", "HyDE", "Reflection"):
        _widget(app, "toggle", label)
    for label in ("Retrievers", "Fusion mode", "Reflection strategy", "Chunking strategy", "LLM backend", "Embedded model"):
        _widget(app, "selectbox", label)
    assert _widget(app, "selectbox", "Embedded model").options == ["qwen2.5-1.5b-instruct", "qwen2.5-0.5b-instruct"]
    assert _widget(app, "slider", "Top-k").value == 5
    assert _widget(app, "text_input", "API key environment variable").value == "RAG_LLM_API_KEY"


def test_applied_settings_survive_a_browser_reload(app: AppTest, data_dir: Path) -> None:
    _widget(app, "slider", "Top-k").set_value(8)
    _widget(app, "toggle", "MMR").set_value(True)
    _widget(app, "selectbox", "Fusion mode").set_value("rrf")
    _click(app, "Apply settings")

    assert any("Applied 3 change(s)" in s.value for s in app.success)
    applied = _applied(app)
    assert (applied.retrieval.top_k, applied.mmr.enabled, applied.retrieval.fusion) == (8, True, "rrf")
    saved = yaml.safe_load((data_dir / "presets" / ".current.yaml").read_text())
    assert saved["retrieval"]["top_k"] == 8
    changed = app.dataframe[0].value
    assert set(changed["setting"]) == {"retrieval.top_k", "mmr.enabled", "retrieval.fusion"}

    reloaded = _new_app()  # a new browser session: nothing in session_state
    reloaded.run()
    assert not reloaded.exception
    assert _widget(reloaded, "slider", "Top-k").value == 8
    assert _widget(reloaded, "toggle", "MMR").value is True
    assert _widget(reloaded, "selectbox", "Fusion mode").value == "rrf"


def test_invalid_combination_is_refused_with_the_field_named(app: AppTest, data_dir: Path) -> None:
    _widget(app, "slider", "Candidate-k").set_value(3)  # below top-k 5
    _click(app, "Apply settings")

    assert any("retrieval.candidate_k" in e.value and "top_k" in e.value for e in app.error)
    assert _applied(app).retrieval.candidate_k == RetrievalConfig().candidate_k
    assert not (data_dir / "presets" / ".current.yaml").exists()


def test_presets_save_load_delete_and_builtins_are_read_only(app: AppTest, data_dir: Path) -> None:
    _widget(app, "slider", "Top-k").set_value(12)
    _click(app, "Apply settings")
    _widget(app, "text_input", "Preset name").set_value("my tune")
    _click(app, "Save preset")
    assert (data_dir / "presets" / "my tune.yaml").exists()
    assert "my tune" in _widget(app, "selectbox", "Preset").options
    assert _widget(app, "selectbox", "Preset").value == "my tune"  # the saved preset is selected

    assert not _widget(app, "button", "Delete preset").disabled
    _widget(app, "selectbox", "Preset").set_value("Vector only").run()
    assert _widget(app, "button", "Delete preset").disabled
    _click(app, "Load preset")
    assert _widget(app, "selectbox", "Retrievers").value == "vector"
    assert _widget(app, "slider", "Top-k").value == 5  # built-ins apply over the defaults
    assert _applied(app).retrieval.sources == "vector"

    _widget(app, "selectbox", "Preset").set_value("my tune")
    _click(app, "Load preset")
    assert _widget(app, "slider", "Top-k").value == 12
    assert _widget(app, "selectbox", "Retrievers").value == "hybrid"

    _widget(app, "text_input", "Preset name").set_value("Default")
    _click(app, "Save preset")
    assert any("built-in" in e.value for e in app.error)

    _widget(app, "selectbox", "Preset").set_value("my tune")
    _click(app, "Delete preset")
    assert not (data_dir / "presets" / "my tune.yaml").exists()
    assert "my tune" not in _widget(app, "selectbox", "Preset").options


def test_reset_to_defaults_forgets_the_remembered_settings(app: AppTest, data_dir: Path) -> None:
    _widget(app, "slider", "Top-k").set_value(9)
    _click(app, "Apply settings")
    assert (data_dir / "presets" / ".current.yaml").exists()

    _click(app, "Reset to defaults")
    assert _widget(app, "slider", "Top-k").value == 5
    assert _applied(app) == RagConfig().with_overrides({"storage.data_dir": str(data_dir)})
    assert not (data_dir / "presets" / ".current.yaml").exists()
    assert any("Everything is at its default" in c.value for c in app.caption)


def test_uploaded_preset_applies_and_a_bad_one_is_explained(app: AppTest) -> None:
    good = yaml.safe_dump({"retrieval": {"top_k": 7}, "mmr": {"enabled": True}}).encode()
    _widget(app, "file_uploader", "Upload a preset (YAML)").set_value(("mine.yaml", good, "application/x-yaml"))
    app.run()
    _click(app, "Apply uploaded preset")
    assert _applied(app).retrieval.top_k == 7 and _applied(app).mmr.enabled
    assert _widget(app, "slider", "Top-k").value == 7

    bad = yaml.safe_dump({"storage": {"data_dir": "/elsewhere"}}).encode()
    _widget(app, "file_uploader", "Upload a preset (YAML)").set_value(("bad.yaml", bad, "application/x-yaml"))
    app.run()
    _click(app, "Apply uploaded preset")
    assert any("storage" in e.value and "not allowed" in e.value for e in app.error)
    assert _applied(app).retrieval.top_k == 7


def test_chunking_change_prompts_and_runs_a_reindex(app: AppTest, tmp_path: Path) -> None:
    from rag.ingest.ingestor import Ingestor
    from ui.resources import base_config, get_store

    store = get_store(base_config())
    result = Ingestor(store, base_config()).ingest_path(fixtures.make_english_pdf(tmp_path, pages=4))
    assert result.ok
    app.run()

    _widget(app, "number_input", "Chunk size (tokens)").set_value(40)
    _widget(app, "number_input", "Chunk overlap (tokens)").set_value(0)
    _click(app, "Apply settings")
    assert any("Re-index needed" in w.value and "chunking.chunk_size" in w.value for w in app.warning)

    _click(app, "Re-index all documents")
    from ui.resources import get_ingest_queue

    get_ingest_queue(base_config()).embedder.wait(timeout=60)  # re-indexed documents embed in the background
    record = store.document(result.doc_id)
    assert record.status == "completed" and record.chunks > result.chunks
    assert all(c.page_end - c.page_start <= 1 for c in store.chunks(result.doc_id))
    app.run()
    assert not any("Re-index needed" in w.value for w in app.warning)


def test_an_embedding_batch_size_change_asks_for_no_reindex(app: AppTest, tmp_path: Path) -> None:
    from rag.ingest.ingestor import Ingestor
    from ui.resources import base_config, get_store

    assert Ingestor(get_store(base_config()), base_config()).ingest_path(fixtures.make_english_pdf(tmp_path)).ok
    app.run()
    _widget(app, "number_input", "Embedding batch size").set_value(8)
    _click(app, "Apply settings")
    assert _applied(app).embedding.batch_size == 8
    assert not any("Re-index needed" in w.value for w in app.warning)  # the stored chunks and vectors are the same

    _widget(app, "number_input", "Chunk size (tokens)").set_value(200)
    _click(app, "Apply settings")
    warning = next(w.value for w in app.warning if "Re-index needed" in w.value)
    assert "chunking.chunk_size" in warning and "batch_size" not in warning


class _Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(200 if self.path.endswith("/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"data": []}')

    def log_message(self, *args) -> None:
        pass


def test_connection_check_reports_a_live_and_a_dead_server(app: AppTest) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _widget(app, "selectbox", "LLM backend").set_value("openai")
        _widget(app, "text_input", "Server base URL").set_value(f"http://127.0.0.1:{server.server_port}/v1")
        _click(app, "Apply settings")
        _click(app, "Test connection")
        assert any("answered" in s.value for s in app.success)
    finally:
        server.shutdown()
        server.server_close()

    _widget(app, "text_input", "Server base URL").set_value(f"http://127.0.0.1:{server.server_port}/v1/")
    _click(app, "Apply settings")
    _click(app, "Test connection")
    assert any("embedded model instead" in e.value for e in app.error)


def test_api_key_itself_is_never_written(app: AppTest, data_dir: Path, monkeypatch) -> None:
    # changed on purpose: the variable must end in _API_KEY (was MY_LLM_KEY), and the remembered settings no
    # longer hold the variable's name either (they never carry the LLM endpoint); a saved preset does
    monkeypatch.setenv("MY_LLM_API_KEY", "sk-secret-value")
    _widget(app, "text_input", "API key environment variable").set_value("MY_LLM_API_KEY")
    _click(app, "Apply settings")
    assert _applied(app).llm.api_key_env == "MY_LLM_API_KEY"
    text = (data_dir / "presets" / ".current.yaml").read_text()
    assert "MY_LLM_API_KEY" not in text and "sk-secret-value" not in text
    _widget(app, "text_input", "Preset name").set_value("with key")
    _click(app, "Save preset")
    text = (data_dir / "presets" / "with key.yaml").read_text()
    assert "MY_LLM_API_KEY" in text and "sk-secret-value" not in text

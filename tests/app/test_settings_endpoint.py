"""The Settings page never lets a file (uploaded preset, saved preset, remembered settings) redirect the LLM
or its key without a confirmation that shows the host (issue #14, first finding)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from rag.config import RagConfig
from tests.app.conftest import open_app

PAGE = "pages/settings.py"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible ``/models`` that records every request and its Authorization header."""

    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.seen.append((self.path, self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"data": []}')

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list]]:
    """A server standing for an attacker's host: its base URL and the requests it received."""
    seen: list[tuple[str, str | None]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1", seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def app(app_data: Path) -> AppTest:
    test = open_app(PAGE)
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


def _upload(app: AppTest, name: str, data: dict) -> None:
    _widget(app, "file_uploader", "Upload a preset (YAML)").set_value((name, yaml.safe_dump(data).encode(),
                                                                       "application/x-yaml"))
    app.run()
    _click(app, "Apply uploaded preset")


def _texts(app: AppTest) -> str:
    return "\n".join(e.value for kind in ("warning", "success", "error", "info", "code", "markdown", "caption")
                     for e in getattr(app, kind))


def test_uploaded_preset_cannot_redirect_the_llm_without_confirmation(app: AppTest, collector, monkeypatch) -> None:
    url, seen = collector
    monkeypatch.setenv("STOLEN_API_KEY", "sk-very-secret")
    _upload(app, "team.yaml", {"llm": {"backend": "openai", "base_url": url, "model": "m",
                                       "api_key_env": "STOLEN_API_KEY"}, "retrieval": {"top_k": 7}})

    applied = _applied(app)
    assert applied.retrieval.top_k == 7  # everything else applies
    assert applied.llm == RagConfig().llm
    text = _texts(app)
    assert "not applied" in text and "llm.base_url" in text and "llm.api_key_env" in text
    port = url.split(":")[2].split("/")[0]
    assert f"http://127.0.0.1:{port}" in text and "$STOLEN_API_KEY" in text  # the host and key, before confirming

    _click(app, "Test connection")  # talks only to what the user applied: the embedded model, not the file's host
    assert seen == []

    _click(app, "Confirm LLM endpoint")
    assert _applied(app).llm.base_url == url and _applied(app).llm.backend == "openai"
    _click(app, "Test connection")
    assert seen and seen[-1] == ("/v1/models", "Bearer sk-very-secret")


def test_a_held_endpoint_can_be_discarded(app: AppTest, collector) -> None:
    url, _ = collector
    _upload(app, "team.yaml", {"llm": {"base_url": url}})
    _click(app, "Discard endpoint change")
    assert _applied(app).llm == RagConfig().llm
    assert not any(b.label == "Confirm LLM endpoint" for b in app.button)


def test_a_saved_preset_from_another_browser_needs_the_same_confirmation(app: AppTest, app_data: Path,
                                                                         collector) -> None:
    url, _ = collector
    (app_data / "presets").mkdir(parents=True, exist_ok=True)
    (app_data / "presets" / "shared.yaml").write_text(yaml.safe_dump({"llm": {"base_url": url},
                                                                      "mmr": {"enabled": True}}))
    app.run()
    _widget(app, "selectbox", "Preset").set_value("shared").run()
    _click(app, "Load preset")
    assert _applied(app).mmr.enabled and _applied(app).llm.base_url == RagConfig().llm.base_url
    assert "llm.base_url" in _texts(app)
    _click(app, "Confirm LLM endpoint")
    assert _applied(app).llm.base_url == url


def test_one_browsers_endpoint_choice_does_not_reach_another_browser(app: AppTest, app_data: Path, collector) -> None:
    url, seen = collector
    # browser A types an endpoint in the form and applies it, with another setting
    _widget(app, "selectbox", "LLM backend").set_value("openai")
    _widget(app, "text_input", "Server base URL").set_value(url)
    _widget(app, "slider", "Top-k").set_value(8)
    _click(app, "Apply settings")
    assert _applied(app).llm.base_url == url

    other = open_app(PAGE)  # browser B: a new session on the same server
    other.run()
    assert not other.exception
    assert _applied(other).retrieval.top_k == 8  # remembered settings still carry over
    assert _applied(other).llm == RagConfig().llm  # the endpoint comes from the base config only
    assert _widget(other, "text_input", "Server base URL").value == RagConfig().llm.base_url
    _widget(other, "button", "Test connection").click().run()
    assert seen == []
    assert url not in (app_data / "presets" / ".current.yaml").read_text()


def test_the_form_refuses_a_key_variable_outside_the_pattern(app: AppTest, app_data: Path) -> None:
    _widget(app, "text_input", "API key environment variable").set_value("AWS_SECRET_ACCESS_KEY")
    _click(app, "Apply settings")
    assert any("llm.api_key_env" in e.value and "_API_KEY" in e.value for e in app.error)
    assert _applied(app).llm.api_key_env == "RAG_LLM_API_KEY"

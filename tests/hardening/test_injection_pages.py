"""Issue #14, suite 5, on the pages: with every LLM step on and a model that obeys the hostile document
(named with a Markdown image, an RTL override and a zero-width space), nothing on Chat or Documents
renders as a link, an image or HTML, and nothing connects to the document's host.
"""

from __future__ import annotations

import socket
from dataclasses import replace
from pathlib import Path

import pytest

import rag.runtime
from rag.models.llms import LLMHandle
from tests.app.conftest import app_data, open_app  # noqa: F401 - app_data is a fixture
from tests.app.markup import live, markdown_strings
from tests.hardening.hostile_prompts import HOST, QUESTION, ObedientLLM, make_hostile_pdf

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def obedient(app_data: Path, monkeypatch) -> ObedientLLM:  # noqa: F811
    for setting in ("RAG_QUERY__REWRITE", "RAG_QUERY__HYDE", "RAG_REFLECTION__ENABLED"):
        monkeypatch.setenv(setting, "true")
    llm = ObedientLLM()
    monkeypatch.setattr(rag.runtime, "build_llm_handle", lambda config, **_: LLMHandle(llm, "embedded", "obedient"))
    return llm


@pytest.fixture
def connections(monkeypatch) -> list[str]:
    tried: list[str] = []
    original = socket.socket.connect
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: tried.append(str(address)) or
                        original(self, address))
    return tried


def _ingest_hostile(tmp_path: Path, *, metadata_llm=None) -> str:
    from rag.ingest.ingestor import Ingestor
    from ui.resources import base_config, get_store

    config = base_config()
    if metadata_llm is not None:
        config = replace(config, metadata=replace(config.metadata, enabled=True))
    result = Ingestor(get_store(base_config()), config, metadata_llm=metadata_llm).ingest_path(make_hostile_pdf(tmp_path))
    assert result.ok, result.error
    return result.doc_id


def test_chat_with_every_llm_step_obeying_the_document_renders_nothing_live(obedient: ObedientLLM, tmp_path: Path,
                                                                           connections: list[str]) -> None:
    _ingest_hostile(tmp_path)
    app = open_app().run()
    app.chat_input[0].set_value(QUESTION).run()
    app.chat_input[0].set_value("And the backup code?").run()  # a follow-up: condensed with the history

    asked = {kind for kind, _ in obedient.sent}
    assert {"condense", "rewrite", "hyde", "reflection", "gate", "answer"} <= asked, asked
    assert not app.exception and len(app.chat_message) == 4
    assert live(app) == []
    shown = " ".join(str(getattr(element, "value", "")) for element in app.markdown)
    assert "answer.png" in shown  # the obeyed answer is on the page, as text
    labels = " ".join(text for _, text in markdown_strings(app))
    assert "U+202E" in labels and "U+200B" in labels and "\u202e" not in labels  # the name's tricks spelled out
    assert not any(HOST in address for address in connections), connections


def test_documents_page_shows_obeyed_metadata_as_text(obedient: ObedientLLM, tmp_path: Path) -> None:
    _ingest_hostile(tmp_path, metadata_llm=obedient)
    assert any(kind == "metadata" for kind, _ in obedient.sent)
    app = open_app("pages/documents.py").run()

    assert not app.exception
    assert live(app) == []
    assert any(f"<img src=http://{HOST}/metadata" in element.value for element in app.text)  # the summary, as text

"""Shared AppTest setup: a private data folder, hash embeddings instead of the real models, a scripted
LLM, and Streamlit's process-wide caches cleared around each test (they would otherwise leak stores
between tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import rag.runtime
from rag.models.llms import LLMHandle
from tests.fakes import HashEmbedding, ScriptedLLM

APP = str(Path(__file__).resolve().parents[2] / "app.py")

QUESTION = "What is the maximum daily dose of ibuprofen for adults?"
ANSWER = "The maximum daily dose of ibuprofen for adults is 1200 milligrams [1]."


GRADE = "relevance: 9\ncompleteness: 8\nspecificity: 9\nreason: the sources give the dose"


class RoutedLLM(ScriptedLLM):
    """Answers by what is asked, so tests do not depend on how many LLM calls an answer makes: yes to a
    yes/no check, ``GRADE`` to a reflection grading prompt, otherwise the scripted replies."""

    answered: int = 0

    def _next(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "yes or no" in prompt[-300:].lower():
            return "yes"
        if prompt.lstrip().lower().startswith("user: rate how well"):
            return GRADE
        self.answered += 1
        return self.replies[min(self.answered, len(self.replies)) - 1]


def open_app(page: str | None = None, timeout_s: float = 60) -> AppTest:
    """The whole app (navigation included), switched to ``page`` (a ``pages/...`` path) when given."""
    test = AppTest.from_file(APP, default_timeout=timeout_s)
    if page:
        test.switch_page(page)
    return test


@pytest.fixture
def app_data(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """RAG_DATA_DIR in tmp_path and fake embedders; yields the data folder."""
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(rag.runtime, "load_embedder", lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}"))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield tmp_path / "data"
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def llm() -> RoutedLLM:
    return RoutedLLM(replies=[ANSWER])


@pytest.fixture
def app_llm(app_data: Path, monkeypatch, llm: RoutedLLM) -> RoutedLLM:
    """``app_data`` plus ``llm`` as the app's answering model."""
    monkeypatch.setattr(rag.runtime, "build_llm_handle", lambda config, **_: LLMHandle(llm, "embedded", "scripted"))
    return llm


@pytest.fixture
def exports(monkeypatch) -> dict[str, Any]:
    """The download callables a page registers (built on click, so not during the run), by file name."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    registered: dict[str, Any] = {}
    original = MediaFileManager.add_deferred

    def spy(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        registered[file_name] = (data_callable, mimetype)
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    return registered


def ingest(*paths: Path) -> dict[str, str]:
    """Index files through rag into the store the app uses; file name -> doc id."""
    from rag.ingest.ingestor import Ingestor
    from ui.resources import base_config, get_store

    ingestor = Ingestor(get_store(base_config()), base_config())
    ids = {}
    for path in paths:
        result = ingestor.ingest_path(path)
        assert result.ok, result.error
        ids[path.name] = result.doc_id
    return ids

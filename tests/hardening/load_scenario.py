"""The load scenario of issue #14, suite 4: browser-like sessions asking while documents are ingested.

One more session uploads the library through the Documents page and waits for it; then ``sessions``
tabs each ask their questions on the Chat page, one after another as a reader does (so each chat's
history grows, and every question after the first is condensed with it), while the uploading tab keeps
sending new documents through the ingest queue until the last answer is in. Every question is checked
as a reader would see it: the sources appear (time-to-sources is measured from pressing Enter to the
"Sources (n)" expander of that answer), an answer with sources is drawn, no error or traceback.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from tests.hardening.browser import BrowserSession, Drawn, Run, inside, poll
from tests.hardening.load_documents import LoadCorpus

_SOURCES = re.compile(r"^Sources \((\d+)\)")
_WAITING = re.compile(r"Waiting for the model \((\d+) questions? ahead\)")


@dataclass
class Answered:
    """One question as its session saw it."""

    session: int
    question: str
    time_to_sources_s: float | None
    seconds: float
    sources: int
    answer: str
    errors: list[str]
    most_ahead: int = 0  # the largest "N questions ahead" the page showed while it waited


@dataclass
class Ingested:
    file_name: str
    seconds: float
    outcome: str  # the Documents page's line for the file
    during_questions: bool


@dataclass
class LoadReport:
    answers: list[Answered] = field(default_factory=list)
    ingests: list[Ingested] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # a session or the uploader crashed
    seconds: float = 0.0

    @property
    def errors(self) -> list[str]:
        found = [f"{a.question}: {e}" for a in self.answers for e in a.errors]
        found += [f"{a.question}: no sources shown" for a in self.answers if not a.sources]
        found += [f"{i.file_name}: {i.outcome}" for i in self.ingests if "chunks" not in i.outcome]
        return found + self.failures

    def time_to_sources(self, share: float) -> float:
        """The ``share`` quantile (0.95 = p95) of time-to-sources, nearest rank, in seconds."""
        value = _nearest_rank([a.time_to_sources_s for a in self.answers if a.time_to_sources_s is not None], share)
        return float("nan") if value is None else value

    def summary(self) -> dict[str, Any]:
        return {"questions": len(self.answers), "errors": len(self.errors),
                "time_to_sources_p50_s": round(self.time_to_sources(0.50), 3),
                "time_to_sources_p95_s": round(self.time_to_sources(0.95), 3),
                "time_to_sources_p99_s": round(self.time_to_sources(0.99), 3),
                "answer_max_s": round(max((a.seconds for a in self.answers), default=0.0), 2),
                "most_questions_ahead_shown": max((a.most_ahead for a in self.answers), default=0),
                "ingests_during_questions": sum(i.during_questions and "chunks" in i.outcome for i in self.ingests),
                "seconds": round(self.seconds, 1)}


def read_answer(question: str, run: Run, session: int) -> Answered:
    """What the page showed for ``question``: its own bubble in the first run, the redrawn one in the last."""
    first = run.segments[0] if run.segments else []
    chats = [d for d in first if d.kind == "block:chat_message"]
    if len(chats) < 2:
        return Answered(session, question, None, run.seconds, 0, "", [f"no answer bubble: {run.errors()}"])
    bubble = inside(first, chats[-1])
    shown = next((d for d in bubble if d.kind == "block:expandable" and _SOURCES.match(d.text)), None)
    ahead = [int(m.group(1)) for d in bubble if d.kind == "alert" and (m := _WAITING.search(d.text))]
    last = run.last
    final = [d for d in last if d.kind == "block:chat_message"]
    redrawn = inside(last, final[-1]) if final else []
    answer = next((d.text for d in redrawn if d.kind == "markdown" and d.path[len(final[-1].path):][:1] == (0,)), "")
    listed_at = next((d for d in redrawn if d.kind == "block:expandable" and _SOURCES.match(d.text)), None)
    listed = int(_SOURCES.match(listed_at.text).group(1)) if listed_at else 0
    # Streamlit drops a run's unsent deltas when st.rerun starts the redraw (ForwardMsgQueue.clear), so on a
    # busy server the first run's expander can miss the tab: the reader then first sees the sources redrawn
    seen = shown or listed_at
    errors = run.errors(bubble) + run.errors(redrawn) + [e for e in run.errors() if e.startswith("exception")]
    asked = " ".join(_unescape(d.text) for d in inside(first, chats[-2]) if d.kind == "markdown")
    if asked != question:
        errors.append(f"the question bubble reads {asked!r}")
    return Answered(session, question, seen.at if seen else None, run.seconds, listed, answer,
                    list(dict.fromkeys(errors)), max(ahead, default=0))


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _upload_and_wait(tab: BrowserSession, path: Any, during: bool) -> Ingested:
    started = time.monotonic()
    run = tab.upload([(path.name, path.read_bytes())], uploader="Add documents", submit="Upload and index")
    if run.errors() or not run.auto_reruns:
        return Ingested(path.name, time.monotonic() - started, f"not queued: {run.errors()}", during)

    def line(drawn: list[Drawn]) -> str:
        return next((_unescape(d.text) for d in drawn if d.kind == "alert" and _unescape(d.text).startswith(path.name)),
                    "")

    done = poll(tab, run.auto_reruns[-1], lambda r: bool(line(r.last)) or bool(r.errors()), every_s=0.5)
    return Ingested(path.name, time.monotonic() - started, line(done.last) or f"gave up: {done.errors()}", during)


def run_load(url: str, corpus: LoadCorpus, *, sessions: int = 8, questions: int = 50) -> LoadReport:
    """Upload the library, then ``sessions`` tabs ask ``questions`` each while new documents are ingested."""
    report = LoadReport()
    started = time.monotonic()
    asking = threading.Event()
    finished = threading.Event()
    lock = threading.Lock()

    def uploader() -> None:
        tab = BrowserSession(url)
        try:
            tab.run()
            tab.run(page="Documents")
            for path in corpus.library:
                report.ingests.append(_upload_and_wait(tab, path, during=False))
            asking.set()
            number = 0
            while not finished.is_set() or not any(i.during_questions for i in report.ingests):
                number += 1
                report.ingests.append(_upload_and_wait(tab, corpus.upload(number), during=not finished.is_set()))
        except Exception as exc:  # noqa: BLE001 - reported as a failure of the run
            report.failures.append(f"uploader: {type(exc).__name__}: {exc}")
            asking.set()
        finally:
            tab.close()

    def reader(number: int) -> None:
        mine = corpus.questions[number * questions:(number + 1) * questions]
        asking.wait()
        tab = BrowserSession(url)
        try:
            tab.run()
            for question in mine:
                answered = read_answer(question.question, tab.ask(question.question), number)
                with lock:
                    report.answers.append(answered)
        except Exception as exc:  # noqa: BLE001
            report.failures.append(f"session {number}: {type(exc).__name__}: {exc}")
        finally:
            tab.close()

    upload_thread = threading.Thread(target=uploader, name="load-uploader")
    upload_thread.start()
    readers = [threading.Thread(target=reader, args=(n,), name=f"load-session-{n}") for n in range(sessions)]
    for thread in readers:
        thread.start()
    for thread in readers:
        thread.join()
    finished.set()
    upload_thread.join()
    report.seconds = time.monotonic() - started
    return report


@contextmanager
def serve_app(home: Path, *, llm: str = "scripted", embeddings: str = "hash", env: dict[str, str] | None = None,
              server_options: list[str] | None = None) -> Iterator[tuple[str, Path]]:
    """``python -m tests.hardening.load_server`` on a free loopback port, with its data in ``home/data``.

    Yields the URL and the JSON-lines log the server writes (finished answers, waits for the model).
    """
    from tests.e2e.conftest import serve

    log = home / "server-records.jsonl"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "RAG_DATA_DIR": str(home / "data"),
                   "CITEWISE_LOAD_LOG": str(log), **(env or {})}
    environment.pop("RAG_CONFIG", None)
    command = [sys.executable, "-m", "tests.hardening.load_server", "--llm", llm, "--embeddings", embeddings,
               *(server_options or [])]
    with serve(home, command, environment, "streamlit-load.log") as url:
        yield url, log


def server_records(log: Path) -> dict[str, Any]:
    """What the server recorded: every finished answer, and how long calls waited for the model."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    answers = [r for r in records if r["kind"] == "answer"]
    waits = sorted(r["s"] for r in records if r["kind"] == "wait")
    evaluated = sorted(r["prompt_tokens_evaluated"] for r in answers if r.get("prompt_tokens_evaluated") is not None)
    return {"answers": len(answers),
            "answer_types": sorted({r["type"] for r in answers}),
            "answers_with_error": [r["error"] for r in answers if r["error"]],
            "answers_without_sources": sum(not r["sources"] for r in answers),
            "model_calls": len(waits),
            "wait_p95_s": waits[min(len(waits) - 1, int(0.95 * len(waits)))] if waits else 0.0,
            "wait_max_s": waits[-1] if waits else 0.0,
            "most_calls_ahead": max((r["ahead"] for r in records if r["kind"] == "wait"), default=0),
            "model_max_active": max((r.get("model_max_active") or 0 for r in answers), default=0),
            "answer_prompt_tokens_evaluated_p50": evaluated[len(evaluated) // 2] if evaluated else None,
            "answer_prompt_tokens_evaluated_max": evaluated[-1] if evaluated else None,
            "ttft_ms_p95": _nearest_rank([r["ttft_ms"] for r in answers if r.get("ttft_ms") is not None], 0.95)}


def _nearest_rank(values: list[float], share: float) -> float | None:
    """The smallest value with at least ``share`` of the values at or below it (None for no values)."""
    values = sorted(values)
    return values[min(len(values) - 1, max(0, math.ceil(share * len(values)) - 1))] if values else None


def library_problems(data_dir: Path, expected: list[str]) -> list[str]:
    """Data loss after the run: every expected file completed, with its chunks in the keyword and vector indexes."""
    from rag.config import RagConfig
    from rag.index.store import DocumentStore
    from rag.models.embedding_router import EmbedderRouter

    base = RagConfig()
    config = replace(base, storage=replace(base.storage, data_dir=str(data_dir)))
    store = DocumentStore(config, EmbedderRouter(config.embedding, lambda spec: None))  # reads only
    try:
        records = {r.file_name: r for r in store.documents()}
        problems = [f"{name}: missing" for name in expected if name not in records]
        problems += [f"{r.file_name}: {r.status} {r.error}" for r in records.values() if r.status != "completed"]
        problems += [f"{r.file_name}: {len(store.chunks(r.doc_id))} chunks indexed, {r.chunks} recorded"
                     for r in records.values() if len(store.chunks(r.doc_id)) != r.chunks]
        stored = sum(r.chunks for r in records.values())
        # a chunk has one vector per model that embeds its language: two per English chunk by default
        vectors = sum(len(store.router.specs_for(c.language)) for r in records.values() for c in store.chunks(r.doc_id))
        if store.vectors.count() != vectors or len(store.keywords) != stored:
            problems.append(f"{store.vectors.count()} vectors and {len(store.keywords)} keyword entries "
                            f"for {stored} chunks ({vectors} vectors expected)")
        return problems
    finally:
        store.close()

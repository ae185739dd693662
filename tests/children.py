"""Child processes that open the same library as the test, for crash and two-process tests.

``run_child`` / ``start_child`` run ``body`` (Python source) in a child process that has built a
``DocumentStore`` over the test's data folder with the fast fake embedder; ``store``, ``config``,
``router``, ``Ingestor``, ``DocumentStore``, ``os``, ``time`` and ``die()`` (SIGKILL itself) are in
scope. Children are forked from a ``forkserver`` that imported the storage code once, so each starts
in a fraction of a second; each still opens its own store (Chroma client, write lock, SQLite).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import replace
from pathlib import Path

from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.models.embedding_router import EmbedderRouter
from tests.fakes import HashEmbedding

REPO = Path(__file__).resolve().parents[1]
PRELOAD = ["tests.children", "tests.hardening.kill_child"]
_CONTEXT: list = []


def forkserver():
    """The shared forkserver context (one per test process, preloading the storage code)."""
    if not _CONTEXT:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _CONTEXT.append(context)
    return _CONTEXT[0]


def _main(data_dir: str, body: str, open_store: bool, out: str, err: str) -> None:
    sys.stdout = open(out, "w", buffering=1, encoding="utf-8")
    sys.stderr = open(err, "w", buffering=1, encoding="utf-8")
    base = RagConfig()
    config = replace(base, storage=replace(base.storage, data_dir=data_dir))
    router = EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id="hash-" + spec.split(":")[-1]))
    scope = {"os": os, "time": time, "signal": signal, "config": config, "router": router, "Ingestor": Ingestor,
             "DocumentStore": DocumentStore, "die": lambda: os.kill(os.getpid(), signal.SIGKILL)}
    try:
        if open_store:
            scope["store"] = DocumentStore(config, router)
        exec(compile(textwrap.dedent(body), "<child>", "exec"), scope)
    except BaseException:  # noqa: BLE001 - the test reads the traceback from the child's stderr
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()


class Child:
    """A running child: its pid, its output so far, and ways to wait for or kill it."""

    def __init__(self, config: RagConfig, body: str, open_store: bool) -> None:
        folder = Path(tempfile.mkdtemp(prefix="citewise-child-"))
        self._out, self._err = folder / "stdout", folder / "stderr"
        self._process = forkserver().Process(
            target=_main, args=(config.storage.data_dir, body, open_store, str(self._out), str(self._err)))
        self._process.start()

    @property
    def pid(self) -> int:
        return int(self._process.pid)

    def output(self, stream: str = "stdout") -> str:
        path = self._out if stream == "stdout" else self._err
        return path.read_text(encoding="utf-8") if path.exists() else ""

    def wait_for(self, expected: str, *, timeout: float = 60) -> None:
        """Block until the child's stdout holds ``expected``; fail with its stderr otherwise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if expected in self.output():
                return
            if not self._process.is_alive():
                break
            time.sleep(0.02)
        self.kill()
        raise AssertionError(f"child never printed {expected!r}; stderr:\n{self.output('stderr')}")

    def wait(self, timeout: float = 120) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            self.kill()
            raise TimeoutError(f"child {self.pid} still running after {timeout} s")
        return int(self._process.exitcode)

    def kill(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join(30)


def start_child(config: RagConfig, body: str, *, open_store: bool = True) -> Child:
    """Start ``body`` in a child process over ``config``'s library and return at once."""
    return Child(config, body, open_store)


def run_child(config: RagConfig, body: str, *, timeout: float = 120, open_store: bool = True
              ) -> subprocess.CompletedProcess:
    """Run ``body`` in a child process and wait for it; returncode -9 when it died by SIGKILL."""
    child = Child(config, body, open_store)
    code = child.wait(timeout)
    return subprocess.CompletedProcess(["child"], code, child.output(), child.output("stderr"))


def wait_for_line(process: subprocess.Popen, expected: str, *, timeout: float = 60, stream: str = "stdout") -> str:
    """Read a ``Popen``'s ``stream`` until a line contains ``expected``; fail with what it printed otherwise."""
    import selectors

    deadline = time.monotonic() + timeout
    pipe = getattr(process, stream)
    seen = []
    with selectors.DefaultSelector() as readable:  # select.select fails on descriptors past 1024 in a long run
        readable.register(pipe, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if readable.select(0.2):
                line = pipe.readline()
                seen.append(line)
                if expected in line:
                    return line
                if not line and process.poll() is not None:
                    break
    process.kill()
    raise AssertionError(f"child never printed {expected!r}; {stream} so far:\n{''.join(seen)}")

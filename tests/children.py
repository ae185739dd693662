"""Child processes that open the same library as the test, for crash and two-process tests.

``run_child`` starts a fresh interpreter that builds a ``DocumentStore`` over the test's data folder
with the fast fake embedder, then runs ``body`` (Python source with ``store``, ``config``, ``Ingestor``
and ``os`` in scope). A body that ends in ``os.kill(os.getpid(), 9)`` or a patched call that does so
simulates ``kill -9`` at that point.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from rag.config import RagConfig

REPO = Path(__file__).resolve().parents[1]

_PREAMBLE = """
import os, sys, signal, time
sys.path.insert(0, {repo!r})
os.environ["HF_HUB_OFFLINE"] = "1"
from dataclasses import replace
from rag.config import RagConfig
from rag.models.embedding_router import EmbedderRouter
from rag.ingest.ingestor import Ingestor
from rag.index.store import DocumentStore
from tests.fakes import HashEmbedding
base = RagConfig()
config = replace(base, storage=replace(base.storage, data_dir={data_dir!r}))
router = EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id="hash-" + spec.split(":")[-1]))
def die():
    os.kill(os.getpid(), signal.SIGKILL)
"""


def child_script(config: RagConfig, body: str, *, open_store: bool = True) -> str:
    script = _PREAMBLE.format(repo=str(REPO), data_dir=config.storage.data_dir)
    if open_store:
        script += "store = DocumentStore(config, router)\n"
    return script + textwrap.dedent(body)


def run_child(config: RagConfig, body: str, *, timeout: float = 120, open_store: bool = True
              ) -> subprocess.CompletedProcess:
    """Run ``body`` in a child process over ``config``'s library and wait for it to end."""
    return subprocess.run([sys.executable, "-c", child_script(config, body, open_store=open_store)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def start_child(config: RagConfig, body: str, *, open_store: bool = True) -> subprocess.Popen:
    """Start ``body`` in a child process and return at once (stdout is a pipe, line-buffered text)."""
    return subprocess.Popen([sys.executable, "-u", "-c", child_script(config, body, open_store=open_store)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def wait_for_line(process: subprocess.Popen, expected: str, *, timeout: float = 60, stream: str = "stdout") -> str:
    """Read the child's ``stream`` until a line contains ``expected``; fail with its stderr otherwise."""
    import select
    import time

    deadline = time.monotonic() + timeout
    pipe = getattr(process, stream)
    assert pipe is not None
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([pipe], [], [], 0.2)
        if ready:
            line = pipe.readline()
            seen.append(line)
            if expected in line:
                return line
            if not line and process.poll() is not None:
                break
    process.kill()
    other = process.stderr.read() if stream == "stdout" and process.stderr else ""
    raise AssertionError(f"child never printed {expected!r}; {stream} so far:\n{''.join(seen)}\n{other}")

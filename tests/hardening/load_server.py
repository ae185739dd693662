"""``python -m tests.hardening.load_server [--llm scripted|bundled] [--embeddings hash|bundled] [streamlit options]``.

``streamlit run app.py`` for the load suite and ``python -m rag.lab bench load``, from the repository root. Streamlit runs the app's
scripts in this process, so patching ``rag.runtime`` (the one place that builds real components) swaps
the models, as ``tests/e2e/scripted_server.py`` does:

* ``--llm scripted``: the app's own ``EmbeddedLLM`` around ``rag.lab.stand_ins.ScriptedLlama`` (its
  speed from ``--token-ms`` / ``--prompt-ms``), so answers take turns exactly as on the real model;
* ``--llm bundled``: the real embedded model ``llm.embedded_model`` (set it with ``RAG_LLM__EMBEDDED_MODEL``);
* ``--embeddings hash``: the tests' hash embedder (words hashed into 64 dimensions; no model, so 400
  questions cost no embedding time); ``bundled``: the real bundled embedders.

Everything else is the real app: Chroma and BM25 under ``RAG_DATA_DIR``, the ingest queue, every page.
It records, as JSON lines in the file named by ``CITEWISE_LOAD_LOG``, each finished answer (its type,
sources, error and timings) and each wait for the model (seconds, calls waiting when it began).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class _Log:
    """Thread-safe JSON-lines writer."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 - lives with the process
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        with self._lock:
            self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._file.flush()


def _record_waits(llm: Any, log: _Log) -> Any:
    """Give ``llm`` a queue that logs how long each call waited for its turn."""
    from rag.models.turns import ModelTurns

    class RecordingTurns(ModelTurns):
        def _wait_for_turn(self, timeout_s: float) -> None:
            waiting, started = self.waiting + (1 if self.busy else 0), time.monotonic()
            try:
                super()._wait_for_turn(timeout_s)
            finally:
                log.write({"kind": "wait", "s": round(time.monotonic() - started, 4), "ahead": waiting})

    llm._turns = RecordingTurns()
    return llm


def _record_answers(log: _Log, llama: Any = None) -> None:
    """Log every finished answer; with the stand-in, also the most calls it ever ran at once (must stay 1)."""
    from rag.answer.stream import AnswerStream

    original = AnswerStream.result

    def result(self: AnswerStream) -> Any:
        finished = original(self)
        if not getattr(self, "_load_logged", False):
            self._load_logged = True
            timings = finished.timings
            log.write({"kind": "answer", "type": type(finished).__name__, "question": finished.question,
                       "sources": len(finished.sources), "citations": len(finished.citations),
                       "error": finished.error, "abstained": finished.abstained, "answer_chars": len(finished.answer),
                       **{k: timings.get(k) for k in ("sources_ms", "condense_ms", "answer_check_ms", "ttft_ms",
                                                      "total_ms", "prompt_tokens_evaluated", "context_tokens")},
                       "model_max_active": getattr(llama, "max_active", None)})
        return finished

    AnswerStream.result = result


def main() -> None:
    """Patch the model builders as asked, then hand over to Streamlit's command line."""
    parser = argparse.ArgumentParser(prog="python -m tests.hardening.load_server", description=__doc__.split("\n")[0])
    parser.add_argument("--llm", choices=("scripted", "bundled"), default="scripted")
    parser.add_argument("--embeddings", choices=("hash", "bundled"), default="hash")
    parser.add_argument("--token-ms", type=float, default=2.0, help="scripted model: ms per generated piece")
    parser.add_argument("--prompt-ms", type=float, default=10.0, help="scripted model: ms per call before output")
    parser.add_argument("--check-keeps-ms", type=float, default=None,
                        help="how long the answerability check keeps the model for its answer (default: the app's)")
    args, streamlit_args = parser.parse_known_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    import rag.models.llms
    import rag.runtime

    log = _Log(os.environ.get("CITEWISE_LOAD_LOG", ""))
    if args.check_keeps_ms is not None:  # for measuring what keeping the model for the answer is worth
        import rag.models.llm_embedded

        rag.models.llm_embedded.CHECK_KEEPS_MODEL_S = args.check_keeps_ms / 1000
    if args.llm == "scripted":
        from rag.lab.stand_ins import ScriptedLlama
        from rag.models.llm_embedded import EmbeddedLLM
        from rag.models.llms import LLMHandle

        llama = ScriptedLlama(token_s=args.token_ms / 1000, prompt_s=args.prompt_ms / 1000)
        llm = _record_waits(EmbeddedLLM(llama, model_name="scripted"), log)
        rag.runtime.build_llm_handle = lambda config, **_: LLMHandle(llm, "embedded", "scripted")
        _record_answers(log, llama)
    else:
        _record_answers(log)
        load = rag.models.llms.load_embedded_llm
        rag.models.llms.load_embedded_llm = lambda *a, **k: _record_waits(load(*a, **k), log)
    if args.embeddings == "hash":
        from tests.fakes import HashEmbedding

        rag.runtime.load_embedder = lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}")

    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *streamlit_args]
    cli.main()


if __name__ == "__main__":
    main()

"""``streamlit run app.py`` with the models swapped the way the AppTests swap them: a scripted LLM that
answers ``tests.hostile.ANSWER`` (yes to the answerability check) and hash embeddings. The browser
test that needs the model's exact output starts this instead of the real app
(``python -m tests.e2e.scripted_server [streamlit options]``, from the repository root).

Streamlit runs the app's scripts in this process, so patching ``rag.runtime``, the one place that
builds real components, is enough.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    """Patch the model builders, then hand over to Streamlit's command line."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    import rag.runtime
    from rag.models.llms import LLMHandle
    from tests import hostile
    from tests.app.conftest import RoutedLLM
    from tests.fakes import HashEmbedding

    llm = RoutedLLM(replies=[hostile.ANSWER])
    rag.runtime.build_llm_handle = lambda config, **_: LLMHandle(llm, "embedded", "scripted")
    rag.runtime.load_embedder = lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}")

    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *sys.argv[1:]]
    cli.main()


if __name__ == "__main__":
    main()

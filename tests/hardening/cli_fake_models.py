"""``python -m rag`` with the hash embedder in place of the bundled models, for two-process tests:
``python -m tests.hardening.cli_fake_models docs --json`` runs the real command line code."""

from __future__ import annotations

import rag.runtime
from tests.hardening.library import fake_router

rag.runtime.build_router = fake_router

if __name__ == "__main__":
    from rag.cli.main import main

    raise SystemExit(main())

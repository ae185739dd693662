"""Citewise: chat with your own documents, with citations you can see on the page."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import ui.preload  # noqa: E402, F401  (the heavy imports, once, before sessions race for them)
from ui.navigation import navigation  # noqa: E402
from ui.resources import get_ingest_queue  # noqa: E402
from ui.state import current_config  # noqa: E402

page = navigation()
# the background embedder resumes documents left keyword-only (a restart mid-embedding), whichever page opens
get_ingest_queue(current_config())
page.run()

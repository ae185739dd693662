"""The heavy libraries, imported once before any page runs.

Streamlit runs every browser session's script in a thread of its own, so two sessions that start
together (two tabs, or a reload during the first run) import numpy, pandas, chromadb and llama-index
at the same time. numpy's first import is not safe to race: one thread can see a half-initialised
``numpy._typing`` and fail with "cannot import name 'NDArray' from partially initialized module".
``app.py`` imports this module first; Python's lock on this module makes every other session wait here
until the first has finished these imports, after which they are free.

Every page imports it first too: until some session's ``app.py`` has called ``st.navigation``, Streamlit
treats the ``pages/`` folder as a multipage app of its own, so a session whose first request is a page's
URL (``/documents``) runs that page without ``app.py``. The browser suite hit exactly that: one session
on ``/documents`` importing llama-index while another imported it here ("cannot import name 'LLM' from
partially initialized module"). Such a page run then sets up the app's navigation itself (``ui.navigation``).

It imports everything the pages import, so a page only ever finds finished modules.
"""

from __future__ import annotations

import numpy  # noqa: F401
import pandas  # noqa: F401

import rag.answer.engine  # noqa: F401  (llama-index)
import rag.index.store  # noqa: F401  (chromadb)
import rag.ingest.queue  # noqa: F401
import ui.answer_view  # noqa: F401
import ui.compare_view  # noqa: F401
import ui.eval_view  # noqa: F401
import ui.ingest_view  # noqa: F401
import ui.navigation  # noqa: F401
import ui.reindex  # noqa: F401
import ui.resources  # noqa: F401
import ui.safe_text  # noqa: F401
import ui.settings_form  # noqa: F401
import ui.state  # noqa: F401
import ui.trace_view  # noqa: F401

"""The app's page config and navigation, which every script run must set up, even one Streamlit starts
without ``app.py``.

Streamlit treats a ``pages/`` folder beside the main script as an old-style multipage app until some
session's script has called ``st.navigation``. In that window (the first seconds after the server starts,
while ``app.py``'s first run is still importing) a tab opened at a page's URL, such as one that reconnects
to ``/documents`` after a restart, runs that page's script alone: Streamlit's centred layout and a sidebar
of file names that lists "app", until a later rerun in the middle of the visit switches to the app's. So
``app.py`` and every page call ``set_up_navigation``: a page run that way sets up what ``app.py`` would
have, and registering the pages ends the old mode for every session.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager  # Streamlit is pinned; its flag for the old mode
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

PAGES = (  # script, title, icon; the first is the default page
    ("pages/chat.py", "Chat", ":material/chat:"),
    ("pages/documents.py", "Documents", ":material/description:"),
    ("pages/settings.py", "Settings", ":material/tune:"),
    ("pages/compare.py", "Compare", ":material/compare:"),
    ("pages/evaluation.py", "Evaluation", ":material/monitoring:"),
)


def navigation() -> st.Page:
    """The app's page config and navigation; returns the page this run shows (``app.py`` runs it)."""
    # an emoji icon, not ":material/...": the browser fetches a material favicon from fonts.gstatic.com,
    # while an emoji one is drawn from a data: URL (the app makes no request off the machine)
    st.set_page_config(page_title="Citewise", page_icon="📖", layout="wide")
    return st.navigation([st.Page(script, title=title, icon=icon, default=index == 0)
                          for index, (script, title, icon) in enumerate(PAGES)])


def set_up_navigation() -> None:
    """Called first by every page: a page Streamlit ran without ``app.py`` sets up the app's navigation
    itself (a page is known by its URL path in both modes, so this run goes on with the same page)."""
    if not PagesManager.uses_pages_directory:
        return
    ctx = get_script_run_ctx()
    # st.navigation makes the main script the active one, for app.py to run the page under the page's own
    # identity; this run is already inside the page, and its widgets must keep that identity, or a value the
    # browser sent for them (a question typed in the chat box) would be dropped.
    with ctx.run_with_active_hash(ctx.pages_manager.current_page_script_hash):
        navigation()

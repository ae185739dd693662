"""Citewise: chat with your own documents, with citations you can see on the page."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import streamlit as st  # noqa: E402

import ui.preload  # noqa: E402, F401  (the heavy imports, once, before sessions race for them)

# an emoji icon, not ":material/...": the browser fetches a material favicon from fonts.gstatic.com,
# while an emoji one is drawn from a data: URL (the app makes no request off the machine)
st.set_page_config(page_title="Citewise", page_icon="📖", layout="wide")

pages = [
    st.Page("pages/chat.py", title="Chat", icon=":material/chat:", default=True),
    st.Page("pages/documents.py", title="Documents", icon=":material/description:"),
    st.Page("pages/settings.py", title="Settings", icon=":material/tune:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare:"),
    st.Page("pages/evaluation.py", title="Evaluation", icon=":material/monitoring:"),
]
st.navigation(pages).run()

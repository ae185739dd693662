"""Per-user state in ``st.session_state`` under namespaced keys, with typed getters."""

from __future__ import annotations

import streamlit as st

from rag.config import RagConfig
from ui.resources import base_config

CONFIG_KEY = "settings_config"


def current_config() -> RagConfig:
    if CONFIG_KEY not in st.session_state:
        st.session_state[CONFIG_KEY] = base_config()
    return st.session_state[CONFIG_KEY]


def set_config(config: RagConfig) -> None:
    st.session_state[CONFIG_KEY] = config.validate()

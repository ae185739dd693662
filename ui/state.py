"""Per-user state in ``st.session_state`` under namespaced keys, with typed getters.

The settings in use are also written to ``<data_dir>/presets/.current.yaml`` whenever they change,
so a browser reload (a new session) or a server restart starts from them instead of the defaults.

That file is shared by every browser of the server, so it never carries the LLM endpoint
(``llm.backend``, ``base_url``, ``model``, ``api_key_env``): the endpoint of a new session always comes
from the base config (defaults < YAML < environment), and one browser's endpoint choice, typed in the
form or confirmed from a preset, lasts for that browser's session only. An endpoint a file names is
reported, never taken (``rag.presets.PresetStore.load_current``).
"""

from __future__ import annotations

import streamlit as st

from rag.config import RagConfig
from rag.presets import PresetStore
from ui.resources import base_config

CONFIG_KEY = "settings_config"
CONFIG_NOTICE_KEY = "settings_notice"


def preset_store() -> PresetStore:
    return PresetStore.for_config(base_config())


def current_config() -> RagConfig:
    """The session's settings: remembered ones (with the base config's LLM endpoint) on its first run."""
    if CONFIG_KEY not in st.session_state:
        config, reason = preset_store().load_current(base_config())
        st.session_state[CONFIG_KEY] = config
        if reason:
            st.session_state[CONFIG_NOTICE_KEY] = reason
    return st.session_state[CONFIG_KEY]


def set_config(config: RagConfig) -> None:
    """Use ``config`` for this session and remember it, without its LLM endpoint, for the next one."""
    config = config.validate()
    st.session_state[CONFIG_KEY] = config
    preset_store().save_current(config)


def reset_config() -> RagConfig:
    """Back to the base config (defaults < YAML < environment); forgets the remembered settings."""
    preset_store().clear_current()
    st.session_state[CONFIG_KEY] = base_config()
    return base_config()

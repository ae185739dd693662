"""Settings: every knob of the config, named presets, reset, and re-indexing after chunking changes.

A preset (uploaded or saved) is applied without the LLM endpoint fields it would change; those wait,
with the host they would send questions and the key to, for "Confirm LLM endpoint". Whatever a file
supplied (its name, values, the errors quoting them) is shown as plain text, never as markup.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: a page can run before app.py, see ui/preload.py)
import pandas as pd
import streamlit as st

from rag.config import DEFAULT_HOME, ConfigError, endpoint_host, endpoint_of, endpoint_summary, with_endpoint_of
from rag.presets import PresetError, PresetResult, changed_fields, dump_preset, preset_from_text
from ui.navigation import set_up_navigation
from ui.reindex import reindex_documents
from ui.resources import base_config, get_store
from ui.safe_text import escape_markdown, label
from ui.settings_form import apply_values, check_llm, clear_widgets, reindex_fields, settings_form
from ui.state import CONFIG_NOTICE_KEY, current_config, preset_store, reset_config, set_config

set_up_navigation()  # before anything is drawn: see ui/navigation.py

FLASH_KEY = "settings_flash"
REINDEX_KEY = "settings_reindex"
SELECT_KEY = "settings_preset"
PENDING_KEY = "settings_pending_endpoint"  # {"origin": file name, "held": {dotted: value}} awaiting confirmation

config = current_config()
presets = preset_store()


def switch_to(new_config, message: str, *, remember: bool = True) -> None:
    """Use ``new_config``, note what needs a re-index, and rerun with fresh widgets.

    ``remember=False`` when the caller already stored it (reset forgets the remembered file instead).
    """
    changed = reindex_fields(config, new_config)
    if remember:
        try:
            set_config(new_config)
        except OSError as exc:
            st.error(f"Could not save the settings: {exc}. Hint: check that {presets.root} is writable.")
            return
    if changed:
        st.session_state[REINDEX_KEY] = sorted(set(st.session_state.get(REINDEX_KEY, [])) | set(changed))
    st.session_state[FLASH_KEY] = message
    clear_widgets()
    st.rerun()


def apply_preset(result: PresetResult, origin: str, message: str) -> None:
    """Use the preset without its LLM endpoint; hold the endpoint values it wanted for confirmation."""
    if result.held:
        st.session_state[PENDING_KEY] = {"origin": origin, "held": result.held}
        message += f" The LLM endpoint ({', '.join(result.held)}) was not applied: confirm it below."
    else:
        st.session_state.pop(PENDING_KEY, None)
    switch_to(result.config, message)


def preset_base():
    """What presets apply over: the base config, with this session's applied (confirmed) endpoint."""
    return with_endpoint_of(base_config(), config)


st.title("Settings")
st.caption("Applied settings are used by Chat, Compare and Evaluation, and are remembered across reloads, except "
           "the LLM endpoint: each new session starts from the server's configured one.")
if CONFIG_NOTICE_KEY in st.session_state:
    st.warning(escape_markdown(st.session_state.pop(CONFIG_NOTICE_KEY)))
if FLASH_KEY in st.session_state:
    st.success(st.session_state.pop(FLASH_KEY))  # file and preset names in it are escaped where it is built

# -- an LLM endpoint a preset wanted, held until the user confirms it -------------------------------
if st.session_state.get(PENDING_KEY):
    pending = st.session_state[PENDING_KEY]
    target = {**endpoint_of(config), **pending["held"]}
    with st.container(border=True):
        st.warning(f"Not applied from “{label(pending['origin'])}”: {', '.join(pending['held'])}. These "
                   "choose the server that receives every question with its sources, and which API key is sent "
                   "to it. Confirm only if you trust that host:")
        st.code(endpoint_summary(target), language=None)
        confirm, discard = st.columns(2)
        if confirm.button("Confirm LLM endpoint", type="primary"):
            st.session_state.pop(PENDING_KEY)
            try:
                switch_to(config.with_overrides(pending["held"]),
                          f"LLM endpoint set to {label(endpoint_host(target['llm.base_url']))} for this "
                          "session.")
            except ConfigError as exc:
                st.error(escape_markdown(f"Not applied: {exc}."))
        if discard.button("Discard endpoint change"):
            st.session_state.pop(PENDING_KEY)
            st.session_state[FLASH_KEY] = "Kept the current LLM endpoint."
            st.rerun()

# -- re-index prompt -------------------------------------------------------------------------------
if st.session_state.get(REINDEX_KEY):
    store = get_store(config)
    completed = [r for r in store.documents() if r.status == "completed"]
    if not completed:
        st.session_state.pop(REINDEX_KEY)
    else:
        fields = ", ".join(st.session_state[REINDEX_KEY])
        st.warning(f"Re-index needed: {fields} changed, but your {len(completed)} document(s) are still indexed "
                   "with the old settings. Re-index them here or one by one on the Documents page.")
        left, right = st.columns([1, 3])
        reindex = left.button("Re-index all documents", type="primary")
        right.page_link("pages/documents.py", label="Open Documents")
        if reindex:
            reindex_documents(store, config, completed)
            st.session_state.pop(REINDEX_KEY)

# -- presets ---------------------------------------------------------------------------------------
st.subheader("Presets")
names = presets.names()
if st.session_state.get(SELECT_KEY + "_next") in names:  # select a just-saved preset (set before the widget exists)
    st.session_state[SELECT_KEY] = st.session_state.pop(SELECT_KEY + "_next")
load_col, save_col, file_col = st.columns(3)
with load_col:
    chosen = st.selectbox("Preset", names, key=SELECT_KEY)
    load, delete = st.columns(2)
    if load.button("Load preset"):
        try:
            apply_preset(presets.open(chosen, preset_base()), chosen, f"Loaded preset “{label(chosen)}”.")
        except PresetError as exc:
            st.error(escape_markdown(f"{exc}. Hint: delete the preset file or fix it in a text editor."))
    if delete.button("Delete preset", disabled=presets.is_builtin(chosen),
                     help="Built-in presets are read-only."):
        try:
            presets.delete(chosen)
            st.session_state[FLASH_KEY] = f"Deleted preset “{label(chosen)}”."
            st.rerun()
        except PresetError as exc:
            st.error(escape_markdown(str(exc)))
with save_col:
    name = st.text_input("Preset name", placeholder="e.g. precise answers", key="settings_preset_name")
    if st.button("Save preset", help="Saves the applied settings (apply your edits first)."):
        try:
            path = presets.save(name.strip(), config)
            st.session_state[FLASH_KEY] = f"Saved preset “{label(name.strip())}” to {label(str(path))}."
            st.session_state[SELECT_KEY + "_next"] = name.strip()
            st.rerun()
        except (PresetError, OSError) as exc:
            st.error(f"{escape_markdown(str(exc))}. Hint: built-in names are reserved; pick another name.")
with file_col:
    st.download_button("Download settings (YAML)", dump_preset(config), file_name="citewise-settings.yaml",
                       mime="application/x-yaml")
    upload = st.file_uploader("Upload a preset (YAML)", type=["yaml", "yml"], key="settings_preset_upload")
    if upload is not None and st.button("Apply uploaded preset"):
        try:
            result = preset_from_text(upload.getvalue(), preset_base(), origin=upload.name)
            apply_preset(result, upload.name, f"Applied {label(upload.name)}.")
        except PresetError as exc:
            st.error(f"{label(upload.name)}: {escape_markdown(str(exc))}. Hint: use a file saved with “Download "
                     "settings (YAML)”.")

if st.button("Reset to defaults", help="Back to the defaults (and any RAG_* environment settings)."):
    st.session_state.pop(PENDING_KEY, None)
    switch_to(reset_config(), "Settings reset to defaults.", remember=False)

# -- every knob ------------------------------------------------------------------------------------
st.subheader("All settings")
values = settings_form(config)
if values is not None:
    try:
        new_config = apply_values(config, values)
    except ConfigError as exc:
        # typed by this user in this form, so shown as is (it names the field and its bounds)
        st.error(f"Not applied: {exc}. Hint: fix that field and apply again; nothing was changed.")
    else:
        if new_config == config:
            st.info("No changes to apply.")
        else:
            switch_to(new_config, f"Applied {len(changed_fields(config, new_config))} change(s).")

# -- what differs from the defaults ----------------------------------------------------------------
differences = {k: v for k, v in changed_fields(base_config(), config).items() if not k.startswith("storage.")}
st.subheader(f"Changed from defaults ({len(differences)})")
if differences:
    st.dataframe(pd.DataFrame([{"setting": key, "default": str(old), "current": str(new)}
                               for key, (old, new) in differences.items()]), hide_index=True, width="stretch")
else:
    st.caption("Everything is at its default.")

# -- LLM connection --------------------------------------------------------------------------------
st.subheader("LLM connection")
llm = config.llm
st.caption(label(  # a preset may set any of these strings
    f"Backend {llm.backend}: "
    + (f"{endpoint_host(llm.base_url)} ({llm.base_url}) · model {llm.model} · key from ${llm.api_key_env}"
       if llm.backend == "openai" else f"embedded model {llm.embedded_model}")
    + " (applied settings)"))
if st.button("Test connection", help="Checks the applied settings only, never an unconfirmed endpoint."):
    with st.spinner("Checking…"):
        ok, message = check_llm(config, DEFAULT_HOME)
    (st.success if ok else st.error)(escape_markdown(message))

# -- storage (read-only) ---------------------------------------------------------------------------
with st.expander("Storage (read-only)"):
    st.caption("Set with RAG_DATA_DIR / RAG_CHROMA_* or a config file; presets never change where documents live.")
    st.dataframe(pd.DataFrame([{"setting": f"storage.{k}", "value": str(v)}
                               for k, v in config.to_dict()["storage"].items()]), hide_index=True, width="stretch")

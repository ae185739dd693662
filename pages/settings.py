"""Settings page (being built in this session)."""

import streamlit as st

st.title("Settings")
st.info("This page is being built.")

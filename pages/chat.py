"""Chat page (being built in this session)."""

import streamlit as st

st.title("Chat")
st.info("This page is being built.")

"""Evaluation page (being built in this session)."""

import streamlit as st

st.title("Evaluation")
st.info("This page is being built.")

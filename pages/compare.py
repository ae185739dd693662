"""Compare page (being built in this session)."""

import streamlit as st

st.title("Compare")
st.info("This page is being built.")

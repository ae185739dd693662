"""Streamlit helpers: cached resources and session state. Pages import from here, never from models."""

"""Citewise's engine: ingestion, retrieval and answering. Never imports streamlit."""

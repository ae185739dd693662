"""Benchmarks, training and tuning. Never imported by the app: run it as `python -m rag.lab`."""

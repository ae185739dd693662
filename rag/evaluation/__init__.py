"""Measuring quality: evaluation sets, metrics, and the runs `rag eval` and the Evaluation page share."""

"""The command lines: `python -m rag` (the app's commands) and what it shares with `python -m rag.lab`."""

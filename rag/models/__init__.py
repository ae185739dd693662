"""Models, loaded only from local files: embedders, the embedded GGUF LLM, OpenAI-compatible servers."""

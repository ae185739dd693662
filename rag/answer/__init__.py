"""From passages to a cited answer: the LlamaIndex engine, prompts, citations, verification, highlights."""

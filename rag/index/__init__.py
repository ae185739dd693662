"""What is stored and how it is found again: the registry, Chroma vectors, the BM25 index, the store facade."""

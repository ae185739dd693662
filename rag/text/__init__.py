"""Plain-text helpers every part shares: language detection, token counting, sentence spans, BM25 terms."""

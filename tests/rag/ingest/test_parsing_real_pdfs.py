"""Parse every real PDF of the shared evaluation set (English papers and filings, Chinese reports).

Skipped when ``../shared/data/pdfs`` is not next to the repository. About 8 s for ~770 pages.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rag.ingest.chunking import chunk_document
from rag.config import ChunkingConfig
from rag.documents import ParsedDocument
from rag.text.language import count_tokens, detect_language
from rag.ingest.parse import parse_file

PDF_ROOT = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "pdfs"
PDFS = sorted(PDF_ROOT.glob("*/*.pdf")) if PDF_ROOT.is_dir() else []

pytestmark = pytest.mark.skipif(not PDFS, reason=f"no shared PDFs: {PDF_ROOT} is absent in this checkout")

_parsed: dict[Path, tuple[ParsedDocument, float]] = {}


def parsed(path: Path) -> ParsedDocument:
    """Parse each file once per session, whichever test asks first."""
    if path not in _parsed:
        started = time.perf_counter()
        document = parse_file(path)
        _parsed[path] = (document, time.perf_counter() - started)
    return _parsed[path][0]


@pytest.mark.parametrize("path", PDFS, ids=[f"{p.parent.name}/{p.name}" for p in PDFS])
def test_real_pdf_parses_with_exact_word_offsets(path: Path) -> None:
    document = parsed(path)
    assert document.file_type == "pdf" and document.file_name == path.name
    assert len(document.pages) > 0 and document.title
    assert [page.number for page in document.pages] == list(range(1, len(document.pages) + 1))
    assert count_tokens(document.full_text) > 5 * len(document.pages)  # not just page numbers
    step = max(1, len(document.pages) // 12)
    sample = document.pages[::step] + document.pages[-1:]
    for page in sample:
        assert page.width > 0 and page.height > 0
        for word in page.words:
            assert page.text[word.start:word.end] == word.text, f"page {page.number}: {word}"
    offsets = document.page_offsets()
    for section in document.sections:
        assert 0 <= section.offset <= len(document.full_text)
        page_index = max(i for i, start in enumerate(offsets) if start <= section.offset)
        assert document.pages[page_index].number == section.page


@pytest.mark.parametrize("path", PDFS, ids=[f"{p.parent.name}/{p.name}" for p in PDFS])
def test_real_pdf_language_and_chunks(path: Path) -> None:
    document = parsed(path)
    expected = "zh" if path.parent.name == "zh" else "en"
    assert detect_language(document.full_text) == expected
    config = ChunkingConfig()
    chunks = chunk_document(document, "real", config)
    text = document.full_text
    assert chunks
    for chunk in chunks:
        assert text[chunk.char_start:chunk.char_end] == chunk.text
        assert 0 < count_tokens(chunk.text) <= config.chunk_size
    share = sum(chunk.language == expected for chunk in chunks) / len(chunks)
    assert share > 0.8, f"only {share:.0%} of chunks detected as {expected}"


def test_parse_speed_is_reported() -> None:
    """Not a benchmark; makes the pages-per-second figure visible with ``-rP``."""
    for path in PDFS:
        parsed(path)
    pages = sum(len(document.pages) for document, _ in _parsed.values())
    seconds = sum(elapsed for _, elapsed in _parsed.values())
    print(f"parsed {len(_parsed)} PDFs, {pages} pages in {seconds:.1f} s: {pages / seconds:.0f} pages/s")
    assert pages / seconds > 5  # an order of magnitude below normal; catches pathological slowdowns


@pytest.mark.parametrize(("name", "page", "row", "cell"), [
    ("sec_uber_10q_q1-2022.pdf", 5, "| Goodwill | 8,420 | 8,435 |", "8,435"),
    ("sec_uber_10q_q1-2022.pdf", 19, "| 2026 Senior Note | 1,500 | 1,500 | 8.1% | November 1, 2026 |",
     "November 1, 2026"),
    ("annual-report-2019_000059_huajin.pdf", 7,
     "| 归属于上市公司股东的扣除非经常性损益的净利润 | 343,780,082.77 | 184,269,882.23 | 373,348,279.05 | -15,135,052.21 |",
     "343,780,082.77"),
    ("annual-report-2019_300107_jianxin.pdf", 19, "| 1 | 客户1 | 108,676,069.83 | 11.75% |", "108,676,069.83"),
])
def test_real_tables_become_markdown_rows(name: str, page: int, row: str, cell: str) -> None:
    path = next((p for p in PDFS if p.name == name), None)
    if path is None:
        pytest.skip(f"{name} is not among the shared PDFs")
    document = parsed(path)
    target = document.pages[page - 1]
    blocks = [target.text[t.start:t.end] for t in target.tables]
    assert any(row in block.splitlines() for block in blocks), blocks
    outside = target.text
    for table in sorted(target.tables, key=lambda t: t.start, reverse=True):
        outside = outside[:table.start] + outside[table.end:]
    assert cell not in outside  # the page's running text does not repeat the table's cells

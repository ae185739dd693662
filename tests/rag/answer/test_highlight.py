"""Exact highlights from word offsets on generated English and Chinese PDFs (real PyMuPDF)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import RagConfig
from rag.documents import Chunk
from rag.answer.highlight import find_in_text, locate_passage, merge_lines, render_highlighted_page
from rag.ingest.ingestor import Ingestor
from rag.index.store import DocumentStore
from tests import fixtures


@pytest.fixture
def docs(store: DocumentStore, config: RagConfig, tmp_path: Path) -> dict[str, str]:
    ingestor = Ingestor(store, config)
    en = ingestor.ingest_path(fixtures.make_english_pdf(tmp_path))
    zh = ingestor.ingest_path(fixtures.make_chinese_pdf(tmp_path))
    assert en.ok and zh.ok
    return {"en": en.doc_id, "zh": zh.doc_id}


def _chunk_with(store: DocumentStore, doc_id: str, text: str) -> Chunk:
    return next(c for c in store.chunks(doc_id) if text in c.text.replace("\n", ""))


def _inside(rect: list[float], boxes: list[tuple[float, ...]], slack: float = 0.5) -> bool:
    """The rect lies within the union of the given word boxes (per line, so check against their hull)."""
    x0 = min(b[0] for b in boxes) - slack
    y0 = min(b[1] for b in boxes) - slack
    x1 = max(b[2] for b in boxes) + slack
    y1 = max(b[3] for b in boxes) + slack
    return x0 <= rect[0] <= rect[2] <= x1 and y0 <= rect[1] <= rect[3] <= y1


def test_english_sentence_on_its_page_inside_its_word_boxes(store: DocumentStore, docs: dict[str, str]) -> None:
    chunk = _chunk_with(store, docs["en"], "1200 milligrams")
    located = locate_passage(store, chunk.chunk_id, fixtures.EN_FACT)
    assert [page for page, _ in located] == [2]
    (rect,) = located[0][1]  # one line
    page = store.pages(docs["en"])[1]
    start = page.text.index("The maximum daily dose")
    boxes = [w.box for w in page.words if start <= w.start < start + len(fixtures.EN_FACT)]
    assert _inside(rect, boxes)
    # not a whole-chunk box: the paragraph's other sentences start on the same line but further right
    assert rect[2] - rect[0] < page.width - 2 * 72 - 1


def test_wrapped_passage_gives_one_rect_per_line(store: DocumentStore, docs: dict[str, str]) -> None:
    chunk = _chunk_with(store, docs["en"], "The committee reviewed")
    located = locate_passage(store, chunk, fixtures.EN_WRAPPED)
    assert len(located) == 1 and located[0][0] == 1
    rects = located[0][1]
    assert len(rects) == 2
    assert rects[0][3] <= rects[1][1] + 1  # second line below the first


def test_hyphen_joined_word_is_found(store: DocumentStore, docs: dict[str, str]) -> None:
    chunk = _chunk_with(store, docs["en"], "international guidelines")
    located = locate_passage(store, chunk, fixtures.EN_HYPHENATED)
    assert located and located[0][0] == 1 and len(located[0][1]) == 2


def test_chinese_passage_is_narrowed_inside_cjk_runs(store: DocumentStore, docs: dict[str, str]) -> None:
    chunk = _chunk_with(store, docs["zh"], fixtures.ZH_FACT)
    located = locate_passage(store, chunk, fixtures.ZH_FACT)
    assert [page for page, _ in located] == [2]
    first, second = located[0][1]
    page = store.pages(docs["zh"])[1]
    run = next(w for w in page.words if w.text.endswith("布洛芬每"))
    # the passage starts mid-run ("…随访。|布洛芬每"), so the first rect is the run's tail, not the whole line
    assert run.box[0] + 100 < first[0] and abs(first[2] - run.box[2]) < 1
    assert second[0] == pytest.approx(72.0, abs=1) and second[1] > first[1]
    # "日最大剂量为1200毫克。" is 13 full-width glyphs of 11 pt: the rect ends there, not at the run's end
    assert second[2] == pytest.approx(72 + 13 * 11, abs=2)


def test_passage_across_a_page_break_has_rects_on_both_pages(store: DocumentStore, docs: dict[str, str]) -> None:
    pages = store.pages(docs["en"])
    offset_p2 = len(pages[0].text) + 2
    last_words = pages[0].text[-40:]
    first_words = pages[1].text[:30]
    chunk = Chunk(chunk_id="x", doc_id=docs["en"], file_name="report.pdf", text=last_words + "\n\n" + first_words,
                  index=0, page_start=1, page_end=2, char_start=offset_p2 - 2 - 40, char_end=offset_p2 + 30)
    located = locate_passage(store, chunk, "")
    assert [page for page, _ in located] == [1, 2]
    assert all(rects for _, rects in located)


def test_quote_matching_ignores_whitespace_and_falls_back_to_whole_text() -> None:
    text = "Alpha beta\ngamma delta. Epsilon."
    assert find_in_text(text, "beta gamma  delta") == (6, 22)
    assert find_in_text(text, "nowhere") == (0, len(text))


def test_merge_lines_unions_words_per_line() -> None:
    boxes = [(10, 10, 20, 20), (22, 10, 30, 20), (10, 25, 18, 35)]
    assert merge_lines(boxes) == [[10, 10, 30, 20], [10, 25, 18, 35]]


def test_render_highlighted_page_is_png(store: DocumentStore, docs: dict[str, str]) -> None:
    chunk = _chunk_with(store, docs["en"], "1200 milligrams")
    (page, rects), = locate_passage(store, chunk, fixtures.EN_FACT)
    png = render_highlighted_page(store.stored_file(docs["en"]), page, rects, dpi=50)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from rag.ingest.chunking import chunk_document, heading_paths
from rag.config import ChunkingConfig, ConfigError
from rag.documents import Chunk, Page, ParsedDocument, Section
from rag.text.language import TOKEN_RE, count_tokens
from rag.ingest.parse import parse_file
from tests import fixtures

STRATEGIES = ["recursive", "sentence", "section", "semantic", "parent_child"]


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> ParsedDocument:
    return parse_file(fixtures.make_english_pdf(tmp_path_factory.mktemp("en"), pages=5))


@pytest.fixture(scope="module")
def chinese(tmp_path_factory: pytest.TempPathFactory) -> ParsedDocument:
    return parse_file(fixtures.make_chinese_pdf(tmp_path_factory.mktemp("zh"), pages=4))


def bag_of_words(texts: list[str]) -> np.ndarray:
    """A deterministic stand-in embedder: hashed token counts."""
    vectors = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for token in TOKEN_RE.findall(text.lower()):
            vectors[row, sum(map(ord, token)) % 64] += 1.0
    return vectors


def one_page_doc(text: str, sections: list[Section] | None = None, name: str = "doc.txt") -> ParsedDocument:
    return ParsedDocument(file_name=name, file_type="txt", pages=[Page(number=1, text=text)],
                          sections=sections or [], title=name)


def numbered_sentences(count: int, words: int = 9) -> str:
    filler = " ".join(["word"] * (words - 2))
    return " ".join(f"Sentence {n} {filler}." for n in range(count))


def check_invariants(doc: ParsedDocument, chunks: list[Chunk], config: ChunkingConfig, doc_id: str) -> None:
    text, starts = doc.full_text, doc.page_offsets()
    assert chunks, "no chunks"
    for index, chunk in enumerate(chunks):
        assert chunk.chunk_id == f"{doc_id}:{index:05d}" and chunk.index == index
        assert chunk.doc_id == doc_id and chunk.file_name == doc.file_name
        assert chunk.text == text[chunk.char_start:chunk.char_end]
        assert chunk.text.strip() == chunk.text and count_tokens(chunk.text) > 0
        assert count_tokens(chunk.text) <= config.chunk_size
        page_of = [page.number for offset, page in zip(starts, doc.pages) if offset <= chunk.char_start][-1]
        last_page = [page.number for offset, page in zip(starts, doc.pages) if offset < chunk.char_end][-1]
        assert (chunk.page_start, chunk.page_end) == (page_of, last_page)
        assert chunk.language in ("en", "zh")
    assert [c.char_start for c in chunks] == sorted(c.char_start for c in chunks)


def assert_covers_every_token(doc: ParsedDocument, chunks: list[Chunk]) -> None:
    covered = np.zeros(len(doc.full_text), dtype=bool)
    for chunk in chunks:
        covered[chunk.char_start:chunk.char_end] = True
    missing = [m.group() for m in TOKEN_RE.finditer(doc.full_text) if not covered[m.start():m.end()].all()]
    assert not missing, f"tokens outside every chunk: {missing[:10]}"


# --- every strategy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("language", ["english", "chinese"])
def test_invariants_for_every_strategy(request: pytest.FixtureRequest, strategy: str, language: str) -> None:
    doc = request.getfixturevalue(language)
    config = ChunkingConfig(strategy=strategy, chunk_size=40, chunk_overlap=8, parent_chunk_size=120)
    chunks = chunk_document(doc, "d1", config, embed_fn=bag_of_words)
    check_invariants(doc, chunks, config, "d1")
    assert_covers_every_token(doc, chunks)
    expected = "zh" if language == "chinese" else "en"
    assert sum(chunk.language == expected for chunk in chunks) >= len(chunks) - 1


def test_default_config_on_the_fixture_report(english: ParsedDocument) -> None:
    chunks = chunk_document(english, "rep", ChunkingConfig())
    check_invariants(english, chunks, ChunkingConfig(), "rep")
    assert any(fixtures.EN_FACT in chunk.text for chunk in chunks)
    assert any(chunk.page_start < chunk.page_end for chunk in chunks)  # chunks may span pages


def test_config_is_validated_and_strategy_checked(english: ParsedDocument) -> None:
    with pytest.raises(ConfigError, match="chunk_overlap"):
        chunk_document(english, "d", ChunkingConfig(chunk_size=40, chunk_overlap=40))
    with pytest.raises(ValueError, match="unknown chunking strategy 'bogus'"):
        chunk_document(english, "d", ChunkingConfig(strategy="bogus"))  # type: ignore[arg-type]


def test_whitespace_only_document_gives_no_chunks() -> None:
    assert chunk_document(one_page_doc("  \n\n  "), "d", ChunkingConfig()) == []


# --- recursive --------------------------------------------------------------------------------------


def test_recursive_sizes_and_overlap() -> None:
    doc = one_page_doc(numbered_sentences(60))
    config = ChunkingConfig(chunk_size=40, chunk_overlap=10)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    assert_covers_every_token(doc, chunks)
    assert all(count_tokens(chunk.text) >= 30 for chunk in chunks[:-1])  # packed, not fragmented
    for previous, following in zip(chunks, chunks[1:]):
        assert following.char_start < previous.char_end  # they overlap...
        shared = count_tokens(doc.full_text[following.char_start:previous.char_end])
        assert 5 <= shared <= 10  # ...by up to chunk_overlap tokens


def test_recursive_prefers_paragraph_boundaries() -> None:
    paragraphs = [numbered_sentences(2, words=10).replace("Sentence", f"Para{n}") for n in range(8)]
    doc = one_page_doc("\n\n".join(paragraphs))  # 20 tokens per paragraph
    chunks = chunk_document(doc, "d", ChunkingConfig(chunk_size=45, chunk_overlap=0))
    assert [chunk.text for chunk in chunks] == ["\n\n".join(paragraphs[i:i + 2]) for i in range(0, 8, 2)]


def test_recursive_splits_cjk_without_spaces_or_punctuation() -> None:
    text = "布洛芬每日最大剂量" * 30  # 270 characters, no separator at all
    doc = one_page_doc(text)
    config = ChunkingConfig(chunk_size=50, chunk_overlap=10)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    assert_covers_every_token(doc, chunks)
    assert all(chunk.language == "zh" for chunk in chunks)
    assert max(len(chunk.text) for chunk in chunks) == 50


def test_recursive_cuts_chinese_at_sentence_ends() -> None:
    sentences = [f"第{n}句话说明了布洛芬的用法和注意事项。" for n in range(20)]  # 16 tokens each
    doc = one_page_doc("".join(sentences))
    chunks = chunk_document(doc, "d", ChunkingConfig(chunk_size=40, chunk_overlap=0))
    assert all(chunk.text.endswith("。") for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks) == doc.full_text


def test_chunk_text_is_never_edited_only_offsets_move() -> None:
    doc = one_page_doc("   \n\nFirst paragraph here.   \n\n\n   Second paragraph there.  \n")
    chunks = chunk_document(doc, "d", ChunkingConfig(chunk_size=32, chunk_overlap=0))
    assert [chunk.text for chunk in chunks] == ["First paragraph here.   \n\n\n   Second paragraph there."]
    assert chunks[0].char_start == 5


# --- sentence ---------------------------------------------------------------------------------------


def test_sentence_strategy_packs_whole_sentences_with_sentence_overlap() -> None:
    doc = one_page_doc(numbered_sentences(40) + " 这是第一句中文。这是第二句中文！")
    config = ChunkingConfig(strategy="sentence", chunk_size=40, chunk_overlap=12)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    sentence_starts = {m.start() for m in re.finditer(r"Sentence|这是", doc.full_text)}
    for chunk in chunks:
        assert chunk.char_start in sentence_starts
        assert chunk.text.endswith((".", "。", "！"))
    for previous, following in zip(chunks, chunks[1:]):
        shared = doc.full_text[following.char_start:previous.char_end]
        assert shared.startswith("Sentence") and count_tokens(shared) == 9  # exactly one sentence


def test_sentence_strategy_splits_an_overlong_sentence() -> None:
    doc = one_page_doc(" ".join(["word"] * 100) + ".")
    config = ChunkingConfig(strategy="sentence", chunk_size=32, chunk_overlap=4)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    assert len(chunks) >= 4


# --- section ----------------------------------------------------------------------------------------


def test_section_chunks_never_cross_sections(english: ParsedDocument) -> None:
    config = ChunkingConfig(strategy="section", chunk_size=32, chunk_overlap=6)
    chunks = chunk_document(english, "d", config)
    check_invariants(english, chunks, config, "d")
    bounds = sorted(section.offset for section in english.sections)
    for chunk in chunks:
        assert not any(chunk.char_start < bound < chunk.char_end for bound in bounds)
        assert chunk.heading_path
    fact = next(chunk for chunk in chunks if "ibuprofen" in chunk.text)
    assert fact.heading_path == "Methods > Dosage Study"
    assert {chunk.heading_path for chunk in chunks} >= {"Introduction", "Methods", "Results", "Appendix 2"}


def test_section_preamble_uses_the_title_and_bare_headings_are_skipped() -> None:
    text = "Preface text before any heading.\n\nPart One\n\nChapter A\n\nBody of chapter A."
    sections = [Section("Part One", 1, 1, text.index("Part One")),
                Section("Chapter A", 2, 1, text.index("Chapter A"))]
    doc = one_page_doc(text, sections, name="book.md")
    chunks = chunk_document(doc, "d", ChunkingConfig(strategy="section"))
    assert [(chunk.text, chunk.heading_path) for chunk in chunks] == [
        ("Preface text before any heading.", "book.md"),
        ("Chapter A\n\nBody of chapter A.", "Part One > Chapter A"),
    ]


def test_heading_paths_nest_by_level() -> None:
    sections = [Section("Intro", 1, 1, 0), Section("Method", 2, 1, 10), Section("Data", 3, 1, 20),
                Section("Model", 2, 1, 30), Section("Results", 1, 1, 40), Section("Deep", 3, 1, 50)]
    assert heading_paths(sections) == ["Intro", "Intro > Method", "Intro > Method > Data", "Intro > Model",
                                       "Results", "Results > Deep"]


def test_other_strategies_take_the_heading_path_at_the_chunk_start(english: ParsedDocument) -> None:
    chunks = chunk_document(english, "d", ChunkingConfig(chunk_size=32, chunk_overlap=0))
    paths = heading_paths(english.sections)
    for chunk in chunks:
        before = [path for section, path in zip(english.sections, paths)
                  if section.offset <= chunk.char_start]
        assert chunk.heading_path == (before[-1] if before else "")


# --- pages ------------------------------------------------------------------------------------------


def test_pages_are_computed_from_offsets() -> None:
    pages = [Page(number=n, text=numbered_sentences(1, words=12).replace("Sentence", f"P{n}"))
             for n in range(1, 6)]  # 12 tokens a page
    doc = ParsedDocument(file_name="p.pdf", file_type="pdf", pages=pages)
    chunks = chunk_document(doc, "d", ChunkingConfig(chunk_size=32, chunk_overlap=0))
    assert [(chunk.page_start, chunk.page_end) for chunk in chunks] == [(1, 2), (3, 4), (5, 5)]
    assert chunks[0].text.startswith("P1 0") and "\n\nP2 0" in chunks[0].text


# --- semantic ---------------------------------------------------------------------------------------


def test_semantic_breaks_where_the_topic_changes() -> None:
    cats = [f"Cats sleep in sunny spot {n} all afternoon." for n in range(6)]
    money = [f"Bonds pay interest rate {n} every year." for n in range(6)]
    doc = one_page_doc(" ".join(cats + money + cats[:3]))

    def topic(texts: list[str]) -> np.ndarray:
        return np.array([[1.0, 0.05 * i] if "Cats" in t else [0.05 * i, 1.0] for i, t in enumerate(texts)])

    config = ChunkingConfig(strategy="semantic", chunk_size=200, chunk_overlap=0)
    chunks = chunk_document(doc, "d", config, embed_fn=topic)
    assert [chunk.text for chunk in chunks] == [" ".join(cats), " ".join(money), " ".join(cats[:3])]


def test_semantic_enforces_chunk_size() -> None:
    doc = one_page_doc(numbered_sentences(30))
    config = ChunkingConfig(strategy="semantic", chunk_size=32, chunk_overlap=0)
    chunks = chunk_document(doc, "d", config, embed_fn=lambda texts: np.ones((len(texts), 4)))
    check_invariants(doc, chunks, config, "d")
    assert len(chunks) >= 9


def test_semantic_needs_an_embedder(english: ParsedDocument) -> None:
    with pytest.raises(ValueError, match="needs an embedder"):
        chunk_document(english, "d", ChunkingConfig(strategy="semantic"))


def test_semantic_rejects_a_wrong_embedding_shape() -> None:
    doc = one_page_doc(numbered_sentences(5))
    with pytest.raises(ValueError, match="embed_fn returned shape"):
        chunk_document(doc, "d", ChunkingConfig(strategy="semantic"), embed_fn=lambda texts: np.ones(3))


# --- parent_child -----------------------------------------------------------------------------------


def test_parent_child_children_carry_their_parent() -> None:
    doc = one_page_doc("\n\n".join(numbered_sentences(6).replace("Sentence", f"P{n}s") for n in range(10)))
    config = ChunkingConfig(strategy="parent_child", chunk_size=32, chunk_overlap=4, parent_chunk_size=120)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    by_parent: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        assert chunk.parent_id.startswith("d:parent:")
        assert chunk.text in chunk.parent_text and count_tokens(chunk.parent_text) <= 120
        start = doc.full_text.index(chunk.parent_text)
        assert start <= chunk.char_start and chunk.char_end <= start + len(chunk.parent_text)
        by_parent.setdefault(chunk.parent_id, []).append(chunk)
    assert len(by_parent) >= 4 and all(len(children) >= 2 for children in by_parent.values())
    assert len({children[0].parent_text for children in by_parent.values()}) == len(by_parent)


def test_chunks_from_a_real_file_round_trip_through_metadata(tmp_path: Path) -> None:
    doc = parse_file(fixtures.make_markdown(tmp_path))
    for chunk in chunk_document(doc, "md1", ChunkingConfig(strategy="section")):
        assert Chunk.from_metadata(chunk.text, chunk.metadata()) == chunk


def test_one_giant_token_is_still_split_by_characters() -> None:
    blob = "QUJD" * 2000  # 8000 characters of base64: a single "token"
    doc = one_page_doc(f"Attachment follows. {blob} End of attachment.")
    config = ChunkingConfig(chunk_size=40, chunk_overlap=5)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    assert max(len(chunk.text) for chunk in chunks) <= 40 * 12
    assert "".join(doc.full_text[c.char_start:c.char_end] for c in chunks).count("QUJD") >= 2000


def test_long_numeric_tables_respect_the_character_cap() -> None:
    doc = one_page_doc("\n".join(f"{n:,}.{n % 100:02d}" for n in range(1_000_000, 1_000_400)))
    config = ChunkingConfig(chunk_size=220, chunk_overlap=0)
    chunks = chunk_document(doc, "d", config)
    check_invariants(doc, chunks, config, "d")
    assert_covers_every_token(doc, chunks)
    assert all(len(chunk.text) <= 220 * 12 for chunk in chunks)

"""A passage that reads as a table of contents ranks below the passages it points to, unless the question asks
where something is."""

from __future__ import annotations

from pathlib import Path

import pymupdf
from llama_index.core.schema import NodeWithScore

from rag.config import RagConfig, RetrievalConfig
from rag.ingest.chunking import chunk_document
from rag.ingest.parse import parse_file
from rag.retrieval.contents_listings import asks_where, demote_contents, reads_as_contents
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.query import SearchQuery
from tests.rag.retrieval.passages import ids, passage
from tests.rag.retrieval.test_fusion import StaticRetriever

QUESTION = "In chemgreek's table of letters, which capital is printed for lambda?"
# as the parser reads a LaTeX list of tables: a leader line, its page number on a line of its own
LIST_OF_TABLES = ("List of Tables\n1. Predefined mappings . . . . . . . . . . . .\n4\n"
                  "2. A demonstration of the letter table . . . . . . . . .\n8\n"
                  "3. Letters and their capitals . . . . . . . . . . . . .\n9\nB. References\n10")
LETTER_TABLE = ("Table 2: A demonstration\n| pos | name | lower | upper |\n| --- | --- | --- | --- |\n"
                "| 11. | lambda | λ | Λ |")
ZH_CONTENTS = "目录\n第一章 绪论……………………1\n第二章 字体配置……………………5\n第三章 版式……………………12\n第四章 表格……………………20"



def _candidates() -> list[NodeWithScore]:
    return [passage("list of tables", 0.9, LIST_OF_TABLES), passage("source listing", 0.8, "\\chemlambda % 11: lambda"),
            passage("letter table", 0.7, LETTER_TABLE, kind="table"), passage("prose", 0.3, "Greek letters upright.")]



def test_contents_entries_with_dot_leaders_read_as_contents() -> None:
    assert reads_as_contents(LIST_OF_TABLES)
    assert reads_as_contents(ZH_CONTENTS)
    assert reads_as_contents("Introduction ........ 1\nMethods ........ 4\nResults ........ 9")
    # LaTeX sets a chapter's number, title and page on lines of their own, with leaders for its sections only
    latex = ("Contents\n1\nIntroduction\n2\n2\nInstalling\n3\n2.1\nRequirements . . . . . . .\n3\n2.2\n"
             "Options . . . . . . .\n4\n2.3\nMappings . . . . . . .\n5\n3\nUsage\n6\nA.\nReferences\n9")
    assert reads_as_contents(latex)


def test_prose_tables_and_a_form_with_a_blank_or_two_do_not() -> None:
    assert not reads_as_contents(LETTER_TABLE)
    assert not reads_as_contents("The value is unknown... and so on. Then . . . . . it stops.")
    form = "\n".join(["Name . . . . . . . . . .", "Date . . . . . . . . . ."]
                     + [f"Line {n} of the instructions for the form." for n in range(3)])
    assert not reads_as_contents(form)  # two blanks to fill in
    # three entries among twenty lines of text: a paragraph that ends where a contents page starts
    tail = "\n".join([f"Sentence {n} of a long paragraph." for n in range(17)]
                     + ["Intro . . . . . . . 1", "Setup . . . . . . . 2", "Usage . . . . . . . 3"])
    assert not reads_as_contents(tail)


def test_questions_about_contents_or_pages_keep_contents_where_they_rank() -> None:
    assert asks_where("On which page of the 10-Q does Item 3 start?")
    assert asks_where("What does the table of contents list under chapter 2?")
    assert asks_where("手册目录里第三章叫什么？") and asks_where("第几頁講到字體？")
    assert not asks_where(QUESTION)
    assert ids(demote_contents(_candidates(), "Which page lists the predefined mappings?", 0.5)) == ids(_candidates())


def test_a_contents_passage_keeps_its_share_and_falls_below_the_passages_it_points_to() -> None:
    demoted = demote_contents(_candidates(), QUESTION, 0.5)
    assert ids(demoted) == ["source listing", "letter table", "list of tables", "prose"]
    assert abs(demoted[2].score - 0.45) < 1e-9
    assert ids(demote_contents(_candidates(), QUESTION, 1.0)) == ids(_candidates())  # 1 turns it off


def test_fusion_demotes_contents_and_says_so_in_the_trace() -> None:
    hits = _candidates()
    retrievers = {"vector": StaticRetriever(hits), "bm25": StaticRetriever(hits)}
    # the question names a table: the lift for tables off, so only the demotion moves anything
    config = RetrievalConfig(top_k=2, candidate_k=2, fusion="weighted", table_mention_share=0.0)
    query = SearchQuery(query_str=QUESTION)

    plain = FusionRetriever.from_config(retrievers, config, contents_share=1.0).retrieve(
        SearchQuery(query_str=QUESTION))
    demoted = FusionRetriever.from_config(retrievers, config).retrieve(query)

    assert ids(plain) == ["list of tables", "source listing"]
    assert ids(demoted) == ["source listing", "letter table"]  # the demotion comes before the cut to candidate_k
    assert any("table-of-contents" in note for note in query.trace.get("fusion").notes)


def test_a_parsed_contents_page_reads_as_contents_and_its_chapter_does_not(tmp_path: Path) -> None:
    doc = pymupdf.open()
    contents = doc.new_page()
    contents.insert_text((72, 80), "Contents", fontname="tiro", fontsize=16)
    for number, (title, page) in enumerate([("Introduction", 2), ("Installing the package", 2), ("Options", 3),
                                            ("The letter table", 3), ("Changing a mapping", 4)]):
        y = 120 + number * 16
        contents.insert_text((72, y), title, fontname="tiro", fontsize=10)
        leaders = ". " * int((420 - 80 - pymupdf.get_text_length(title, fontname="tiro", fontsize=10)) / 5)
        contents.insert_text((80 + pymupdf.get_text_length(title, fontname="tiro", fontsize=10), y), leaders,
                             fontname="tiro", fontsize=10)
        contents.insert_text((500, y), str(page), fontname="tiro", fontsize=10)
    chapter = doc.new_page()
    chapter.insert_textbox(pymupdf.Rect(72, 72, 520, 400), "1 Introduction\n\nThe package sets Greek letters "
                           "upright for chemistry. Each mapping pairs a letter's name with its glyph. " * 3,
                           fontname="tiro", fontsize=10)
    doc.save(tmp_path / "manual.pdf")
    doc.close()

    chunks = chunk_document(parse_file(tmp_path / "manual.pdf"), "d", RagConfig().chunking)

    assert [reads_as_contents(chunk.text) for chunk in chunks if chunk.page_start == 1] == [True]
    assert not any(reads_as_contents(chunk.text) for chunk in chunks if chunk.page_start == 2)

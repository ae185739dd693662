"""The neighbouring parts of one split table among the candidates fold into its best-ranked part."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from rag.config import RetrievalConfig
from rag.retrieval.fusion import FusionRetriever
from rag.retrieval.query import SearchQuery
from rag.retrieval.table_fold import fold_table_parts
from rag.retrieval.trace import StageTrace
from rag.text.language import count_tokens
from tests.rag.retrieval.test_fusion import StaticRetriever

UNITS = "Table 2: HEP units\n| Unit | Symbol |\n| --- | --- |\n"
FONTS = "Table 3: Font sizes\n| Size | Points |\n| --- | --- |\n"
# the document's text: three parts of table 2 one after another (a paragraph break between them), then prose,
# then table 3 in one part
PART_1 = UNITS + "| electronvolt | eV |\n| kiloelectronvolt | keV |"
PART_2 = UNITS + "| megaelectronvolt | MeV |\n| gigaelectronvolt | GeV |"
PART_3 = UNITS + "| GeV per c squared | GeV/c2 |\n| TeV per c squared | TeV/c2 |"
PROSE = "The units above are set upright, as the SI brochure asks."
OTHER = FONTS + "| large | 12pt |\n| Huge | 25pt |"


def _layout() -> dict[str, tuple[int, int, int, str, str]]:
    """id: (chunk index, char_start, char_end, kind, text) of the chunks of one document, in order."""
    chunks, offset = {}, 0
    for index, (name, kind, text) in enumerate([("part 1", "table", PART_1), ("part 2", "table", PART_2),
                                                ("part 3", "table", PART_3), ("prose", "text", PROSE),
                                                ("fonts", "table", OTHER)]):
        chunks[name] = (index, offset, offset + len(text), kind, text)
        offset += len(text) + 2
    return chunks


def _node(name: str, score: float, *, doc_id: str = "d", page: int = 4) -> NodeWithScore:
    index, start, end, kind, text = _layout()[name]
    meta = {"chunk_id": f"{doc_id}:{index:05d}", "doc_id": doc_id, "index": index, "char_start": start,
            "char_end": end, "page_start": page, "page_end": page, "kind": kind}
    return NodeWithScore(node=TextNode(id_=f"{doc_id}:{name}", text=text, metadata=meta), score=score)


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_the_parts_next_to_the_best_one_join_it_in_its_slot_and_the_rest_move_up() -> None:
    stage = StageTrace(name="fusion")
    fused = [_node("part 2", 0.9), _node("prose", 0.8), _node("part 3", 0.7), _node("fonts", 0.6),
             _node("part 1", 0.5)]

    folded = fold_table_parts(fused, 800, stage)

    assert _ids(folded) == ["d:part 2", "d:prose", "d:fonts"]
    assert [n.score for n in folded] == [0.9, 0.8, 0.6]
    table = folded[0].node
    # one table: the caption and header once, then every part's rows in document order
    assert table.get_content() == UNITS + "\n".join(
        ["| electronvolt | eV |", "| kiloelectronvolt | keV |", "| megaelectronvolt | MeV |",
         "| gigaelectronvolt | GeV |", "| GeV per c squared | GeV/c2 |", "| TeV per c squared | TeV/c2 |"])
    layout = _layout()
    assert (table.metadata["char_start"], table.metadata["char_end"]) == (layout["part 1"][1], layout["part 3"][2])
    assert table.metadata["table_parts"] == 3
    assert table.metadata["chunk_id"] == "d:00001"  # still cited as the best part, widened to the whole span
    assert "table_parts" in table.excluded_llm_metadata_keys
    assert fused[0].node.get_content() == PART_2  # the input is not changed
    assert any("folded" in note for note in stage.notes)


def test_the_better_ranked_neighbour_joins_first_while_the_passage_fits() -> None:
    fused = [_node("part 2", 0.9), _node("part 3", 0.8), _node("part 1", 0.7)]
    two_parts = count_tokens(PART_2) + count_tokens(PART_3)

    folded = fold_table_parts(fused, two_parts, None)

    assert _ids(folded) == ["d:part 2", "d:part 1"]
    assert folded[0].node.get_content() == PART_2 + "\n" + PART_3.removeprefix(UNITS)
    assert folded[1].node.get_content() == PART_1


def test_a_part_missing_from_the_candidates_ends_the_fold_on_its_side() -> None:
    folded = fold_table_parts([_node("part 1", 0.9), _node("part 3", 0.8)], 800, None)

    assert [n.node.get_content() for n in folded] == [PART_1, PART_3]


def test_tables_of_other_captions_documents_or_kinds_do_not_fold() -> None:
    fused = [_node("part 3", 0.9), _node("prose", 0.8), _node("fonts", 0.7),  # next in the text, not the table
             _node("part 2", 0.6, doc_id="other")]  # the next index, but in another document

    assert [n.node.get_content() for n in fold_table_parts(fused, 800, None)] == [PART_3, PROSE, OTHER, PART_2]


def test_parts_with_text_between_them_do_not_fold() -> None:
    first, second = _node("part 1", 0.9), _node("part 2", 0.8)
    second.node.metadata["char_start"] += 40  # a running header the chunker skipped lies between them

    assert len(fold_table_parts([first, second], 800, None)) == 2


def test_zero_tokens_turns_folding_off() -> None:
    fused = [_node("part 1", 0.9), _node("part 2", 0.8)]
    assert fold_table_parts(fused, 0, None) == fused


def test_fusion_folds_a_part_ranked_below_the_cut_into_its_table() -> None:
    hits = [_node("part 1", 0.9), _node("prose", 0.8), _node("fonts", 0.7), _node("part 2", 0.6)]
    retrievers = {"vector": StaticRetriever(hits), "bm25": StaticRetriever(hits)}
    config = RetrievalConfig(top_k=2, candidate_k=2, fusion="weighted", table_fold_tokens=800)
    # words of the shared caption only: ordering the parts by the question's words leaves them as they are
    query = SearchQuery(query_str="Which symbols does the table of HEP units give?")

    folded = FusionRetriever.from_config(retrievers, config).retrieve(query)
    off = RetrievalConfig(top_k=2, candidate_k=2, fusion="weighted")  # the default: off
    plain = FusionRetriever.from_config(retrievers, off).retrieve(SearchQuery(query_str=query.query_str))

    assert "| gigaelectronvolt | GeV |" in folded[0].node.get_content()
    assert _ids(folded)[0] == "d:part 1" and len(folded) == 2
    assert not any("gigaelectronvolt" in n.node.get_content() for n in plain)
    assert any("folded" in note for note in query.trace.get("fusion").notes)

"""A split table found as one folded passage is cited over all its parts: a quote from any part highlights its row."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from rag.answer.citations import CitedSentence, sources_from_nodes
from rag.answer.locate import locate_citations
from rag.config import RagConfig
from rag.index.store import DocumentStore
from rag.ingest.ingestor import Ingestor
from tests import fixtures
from tests.fakes import make_engine

STATIONS = ["Oslo", "Bergen", "Tromso", "Bodo", "Alta", "Molde", "Hamar", "Skien", "Arendal", "Lillehammer",
            "Kirkenes", "Narvik", "Harstad", "Kristiansund", "Gjovik", "Drammen", "Larvik", "Sandnes", "Haugesund",
            "Steinkjer", "Namsos", "Mosjoen", "Vadso", "Hammerfest"]
ROWS = [(f"{name} weather station", f"{10 + index * 7}", f"{index % 9 + 1}.{index % 7}")
        for index, name in enumerate(STATIONS)]


def test_a_row_in_another_part_of_the_folded_table_is_highlighted_on_its_own_line(
        store: DocumentStore, config: RagConfig, tmp_path: Path) -> None:
    path = fixtures.make_table_pdf(tmp_path, rows=ROWS, caption="Table 4: Snow depth at weather stations",
                                   header=("Station", "Altitude (m)", "Snow depth (cm)"))
    result = Ingestor(store, config).ingest_path(path)
    assert result.ok
    parts = [c for c in store.keywords.chunks_of(result.doc_id) if c.kind == "table"]
    assert len(parts) >= 2  # the table is stored as parts, each repeating caption and header
    wide = config.with_overrides({"retrieval.table_fold_tokens": 800, "generation.max_context_tokens": 4000})

    nodes = make_engine(store, wide).search("What snow depth does the table give for the Oslo weather station?").nodes

    table = nodes[0].node
    assert table.metadata["table_parts"] == len(parts)  # every part, in the best part's slot
    assert "Oslo weather station" in table.get_content() and "Hammerfest weather station" in table.get_content()
    [source] = [s for s in sources_from_nodes(nodes) if s.n == 1]
    assert source.chunk_id == parts[0].chunk_id  # Oslo's part ranked best: cited by its id
    assert "Hammerfest" not in parts[0].text  # the cited row lies in another part

    name, altitude, depth = ROWS[-1]
    [citation] = locate_citations(store, [CitedSentence(f"{name} lies at {altitude} m with {depth} cm of snow.", [1])],
                                  [source])

    with pymupdf.open(path) as pdf:
        page_number = next(p.number + 1 for p in pdf if p.search_for(name))
        label = pdf[page_number - 1].search_for(name)[0]
    assert citation.page == page_number and len(citation.highlights) == 1
    x0, y0, x1, y1 = citation.highlights[0]
    assert abs(y0 - label.y0) < 2 and abs(y1 - label.y1) < 2  # that row's line, not the part the id names
    assert x0 <= label.x0 + 1

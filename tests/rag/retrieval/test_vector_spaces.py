"""Merging the hits of several embedding spaces: each space's scores on its own scale."""

from __future__ import annotations

from typing import Any

from rag.documents import Chunk
from rag.index.vectors import VectorHit
from rag.retrieval.query import SearchQuery
from rag.retrieval.retrievers import VectorRetriever


class _Embedder:
    def __init__(self, model_id: str) -> None:
        self.model_id = model_id


class _Router:
    def __init__(self, *model_ids: str, second: str | None = None) -> None:
        self._embedders = {model_id: _Embedder(model_id) for model_id in model_ids}
        self._second = second

    def second_english(self) -> _Embedder | None:
        return self._embedders[self._second] if self._second else None

    def for_model_id(self, model_id: str) -> _Embedder | None:
        return self._embedders.get(model_id)

    def for_language(self, language: str) -> _Embedder:
        return self._embedders["e5"]

    def query_vector(self, model_id: str, text: str) -> list[float]:
        return [1.0, 0.0]

    def query_vectors_at_once(self, model_ids: Any, texts: Any) -> None:
        pass


class _Vectors:
    """Fixed hits per space, best first, as Chroma returns them."""

    def __init__(self, spaces: dict[str, list[tuple[str, float]]]) -> None:
        self._spaces = spaces
        self.searches: list[str] = []

    def model_ids(self) -> list[str]:
        return list(self._spaces)

    def query(self, model_id: str, embedding: Any, k: int, *, doc_ids: Any = None, language: str | None = None,
              not_language: str | None = None) -> list[VectorHit]:
        self.searches.append(model_id + (f"[{language}]" if language else "") + (f"[not {not_language}]" if not_language else ""))
        hits = [VectorHit(chunk_id, score, chunk_id, _metadata(chunk_id)) for chunk_id, score in self._spaces[model_id]]
        hits = [h for h in hits if (language is None or h.metadata["language"] == language)
                and (not_language is None or h.metadata["language"] != not_language)]
        return hits[:k]


def _metadata(chunk_id: str) -> dict[str, Any]:
    # chunk ids say their language: "zh1" is a Chinese chunk, anything else English
    chunk = Chunk(chunk_id=chunk_id, doc_id="d", file_name="f.pdf", text="", index=0, page_start=1, page_end=1,
                  char_start=0, char_end=0, language="zh" if chunk_id.startswith("zh") else "en")
    return chunk.metadata()


def _search(spaces: dict[str, list[tuple[str, float]]], question: str = "what was the revenue?") -> list[tuple[str, float]]:
    retriever = VectorRetriever(_Vectors(spaces), _Router(*spaces), top_k=10)
    return [(n.node.node_id, round(n.score, 3)) for n in retriever.retrieve(SearchQuery(query_str=question))]


def test_one_space_keeps_its_cosines_and_order() -> None:
    assert _search({"minilm": [("a", 0.61), ("b", 0.55), ("c", 0.20)]}) == [("a", 0.61), ("b", 0.55), ("c", 0.2)]


def test_a_flat_space_of_high_cosines_does_not_outrank_a_clear_match_in_another() -> None:
    # e5 gives an English question ~0.8 against any Chinese chunk; MiniLM's own answer stands out at 0.68
    spaces = {"e5": [("zh1", 0.795), ("zh2", 0.794), ("zh3", 0.790)],
              "minilm": [("en1", 0.68), ("en2", 0.50), ("en3", 0.40)]}
    ranked = [chunk_id for chunk_id, _ in _search(spaces)]
    assert ranked[0] == "en1"  # raw cosines put all three Chinese chunks first
    assert ranked.index("en1") < ranked.index("zh1") and ranked.index("en3") == len(ranked) - 1


def test_a_space_without_hits_leaves_the_other_on_its_cosines() -> None:
    assert _search({"e5": [], "minilm": [("en1", 0.68), ("en2", 0.4)]}) == [("en1", 0.68), ("en2", 0.4)]


def test_rescaled_hits_keep_their_cosine_for_relevance() -> None:
    spaces = {"e5": [("zh1", 0.795), ("zh2", 0.70)], "minilm": [("en1", 0.68), ("en2", 0.40)]}
    retriever = VectorRetriever(_Vectors(spaces), _Router(*spaces), top_k=10)
    nodes = {n.node.node_id: n for n in retriever.retrieve(SearchQuery(query_str="what was the revenue?"))}
    assert round(nodes["en1"].score, 3) == 0.14 and nodes["en1"].node.metadata["cosine"] == 0.68
    assert "cosine" in nodes["en1"].node.excluded_llm_metadata_keys  # never shown to the model


def _ids(retriever: VectorRetriever, query: SearchQuery) -> list[tuple[str, float]]:
    return [(n.node.node_id, round(n.score, 3)) for n in retriever.retrieve(query)]


def test_the_second_english_space_is_split_by_language_between_the_two_roles_in_one_search() -> None:
    # e5 holds the English chunks' second vectors and the Chinese chunks' only ones
    spaces = {"minilm": [("a", 0.61), ("b", 0.40)], "e5": [("b", 0.91), ("zh1", 0.86), ("a", 0.85), ("zh2", 0.80)]}
    vectors = _Vectors(spaces)
    router = _Router(*spaces, second="e5")
    language = VectorRetriever(vectors, router, top_k=10)
    second = VectorRetriever(vectors, router, top_k=10, role="second")
    query = SearchQuery(query_str="what was the revenue?")

    first_list = _ids(language, query)
    second_list = _ids(second, query)

    assert {chunk_id for chunk_id, _ in first_list} == {"a", "b", "zh1", "zh2"}  # no English hit of e5 twice
    assert second_list == [("b", 0.91), ("a", 0.85)]  # e5's English hits on their own cosines
    assert sorted(vectors.searches) == ["e5", "minilm"]  # e5 searched once for both lists


def test_a_chinese_question_leaves_the_second_english_list_empty_and_its_own_space_chinese_only() -> None:
    spaces = {"minilm": [("a", 0.61)], "e5": [("a", 0.93), ("zh1", 0.90), ("zh2", 0.70)]}
    vectors = _Vectors(spaces)
    router = _Router(*spaces, second="e5")
    query = SearchQuery(query_str="营业收入是多少？")
    with query.trace.stage("vector_second"):
        second_list = _ids(VectorRetriever(vectors, router, top_k=10, role="second"), query)
    assert second_list == []
    assert "not searched" in " ".join(query.trace.get("vector_second").notes)
    assert _ids(VectorRetriever(vectors, router, top_k=10), query) == [("zh1", 0.9), ("zh2", 0.7)]


def test_without_a_second_english_embedder_the_second_role_finds_nothing_and_e5_keeps_everything() -> None:
    spaces = {"e5": [("b", 0.91), ("zh1", 0.86)]}
    vectors = _Vectors(spaces)
    assert _ids(VectorRetriever(vectors, _Router(*spaces), top_k=10, role="second"),
                SearchQuery(query_str="revenue?")) == []
    assert _ids(VectorRetriever(vectors, _Router(*spaces), top_k=10),
                SearchQuery(query_str="revenue?")) == [("b", 0.91), ("zh1", 0.86)]


def test_chunks_of_the_other_language_crowding_a_list_are_searched_again_alone() -> None:
    # top_k 2: e5's unfiltered best two are English for a Chinese question, and Chinese for an English one
    spaces = {"minilm": [("a", 0.6)], "e5": [("a", 0.95), ("b", 0.94), ("zh1", 0.90), ("zh2", 0.89), ("c", 0.5)]}
    vectors = _Vectors(spaces)
    router = _Router(*spaces, second="e5")
    chinese = SearchQuery(query_str="营业收入是多少？")
    assert _ids(VectorRetriever(vectors, router, top_k=2), chinese) == [("zh1", 0.9), ("zh2", 0.89)]
    assert vectors.searches == ["e5", "e5[zh]"]

    crowded = {"minilm": [("a", 0.6)], "e5": [("zh1", 0.90), ("zh2", 0.89), ("a", 0.85), ("b", 0.80)]}
    vectors = _Vectors(crowded)
    english = SearchQuery(query_str="what was the revenue?")
    assert _ids(VectorRetriever(vectors, _Router(*crowded, second="e5"), top_k=2, role="second"), english) == [
        ("a", 0.85), ("b", 0.8)]
    assert vectors.searches == ["e5", "e5[not zh]"]


def test_a_chinese_question_in_a_library_without_chinese_text_says_so() -> None:
    spaces = {"minilm": [("a", 0.6)], "e5": [("a", 0.93), ("b", 0.90)]}  # e5 holds only English second vectors
    query = SearchQuery(query_str="营业收入是多少？")
    with query.trace.stage("vector"):
        assert _ids(VectorRetriever(_Vectors(spaces), _Router(*spaces, second="e5"), top_k=10), query) == []
    assert "no document holds Chinese text" in query.trace.get("vector").fallback_reason

"""``BroadQuestionPostprocessor``: a broad question gets the section it names or its document's opening."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any, Callable, ClassVar, Sequence

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.schema import NodeWithScore, QueryBundle

from rag.retrieval.broad import asks_about_whole_document, named_section, section_chunks, subject_words
from rag.retrieval.broad_compare import compared_terms, first_mentions
from rag.retrieval.contents_listings import reads_as_contents
from rag.retrieval.nodes import doc_id_of
from rag.retrieval.postprocessors.base import TracedPostprocessor
from rag.retrieval.query import question_is_broad, report

logger = logging.getLogger(__name__)

ChunksOf = Callable[[str], Sequence[Any]]
# How much of a document's first passage names it (a paper's title and authors; a filing's cover line).
SUBJECT_CHARS = 300


class BroadQuestionPostprocessor(TracedPostprocessor):
    """For a broad question, put the passages it needs first: a named section's, or the document's opening.

    The document is the top passage's, unless the question names another that retrieval found (with no
    document selected, "华锦股份年报第四节" must be read from 华锦's report). A question about the document as a
    whole gets its opening (title, abstract, introduction); one that
    names a section gets that section's passages; a comparison gets the passages where the document first
    names each of the two things (where it defines them); one that names a topic keeps what retrieval found.

    Args:
        chunks_of: doc id -> its chunks in order (``KeywordIndex.chunks_of``).
        make_node: ``(chunk, score) -> NodeWithScore`` (``rag.retrieval.retrievers.chunk_node``).
        opening: How many opening chunks (title, abstract, introduction) a question about the whole document
            gets, before the context budget cuts them. Defaults to 4: such a question names no topic, so what
            retrieval ranks for it is arbitrary, and the opening should fill the budget.
        holder: word -> the document holding most of the library's passages that contain it, or ""
            (``KeywordIndex.main_holder``). Defaults to none: every word of a title names its document.
    """

    stage_name: ClassVar[str] = "broad"
    opening: int = Field(default=4, ge=0, le=10)
    _chunks_of: ChunksOf = PrivateAttr()
    _make_node: Callable[[Any, float], NodeWithScore] = PrivateAttr()
    _holder: Callable[[str], str] | None = PrivateAttr()

    def __init__(self, chunks_of: ChunksOf, make_node: Callable[[Any, float], NodeWithScore], *,
                 opening: int = 4, holder: Callable[[str], str] | None = None, **kwargs: Any) -> None:
        super().__init__(opening=opening, **kwargs)
        self._chunks_of = chunks_of
        self._make_node = make_node
        self._holder = holder

    @classmethod
    def class_name(cls) -> str:
        return "BroadQuestionPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        question = query_bundle.query_str if query_bundle is not None else ""
        if not nodes or not question_is_broad(query_bundle):
            return nodes
        chunks_of = cache(lambda doc: list(self._chunks_of(doc)))  # each document's passages read once per question
        try:
            doc_id = self._named_document(question, nodes, chunks_of)
            chunks = chunks_of(doc_id) if doc_id else []
        except Exception as exc:  # noqa: BLE001 - the retrieved passages still answer
            report(query_bundle, fallback=f"could not read the document's passages: {exc}")
            return nodes
        if doc_id != doc_id_of(nodes[0]):
            report(query_bundle, note=f"broad question names {_file_of(chunks)!r}: its passages first")
            nodes = [n for n in nodes if doc_id_of(n) == doc_id] + [n for n in nodes if doc_id_of(n) != doc_id]
        section = named_section(question)
        compared = compared_terms(question) if section is None else []
        if compared:
            wanted = first_mentions(chunks, compared, skip=reads_as_contents)
            what = "where the document first names " + " and ".join(repr(term) for term in compared)
        elif section is None and not asks_about_whole_document(question, _subject(chunks)):
            report(query_bundle, note="broad question about a topic: the passages retrieval found, whole")
            return nodes
        elif section is not None:
            wanted = _retrieved_within(section_chunks(chunks, section), nodes)
            what = f"section {section.number or repr(section.title)}"
            if not wanted:
                report(query_bundle, fallback=f"broad question: no heading of the top document matches {what}; "
                                              "kept the passages retrieval found")
                return nodes
        else:
            wanted, what = chunks[: self.opening], "the document's opening"
        score = nodes[0].score if nodes[0].score is not None else 1.0
        retrieved = {n.node.node_id for n in nodes}
        wanted = list({chunk.chunk_id: chunk for chunk in wanted}.values())
        report(query_bundle, note=f"broad question: {what} first, {len(wanted)} passages "
                                  f"({sum(c.chunk_id not in retrieved for c in wanted)} not retrieved)")
        placed = {chunk.chunk_id for chunk in wanted}
        return [self._make_node(chunk, score) for chunk in wanted] + [n for n in nodes if n.node.node_id not in placed]

    def _named_document(self, question: str, nodes: Sequence[NodeWithScore], chunks_of: ChunksOf) -> str:
        """The retrieved document the question names, else the top passage's.

        In a library of two annual reports, "华锦股份年报第四节…" was read from whichever report ranked first
        (建新's); the question names its company. A question's word names a document when the document's title
        and file name hold it and the document holds most of the library's passages that contain it (华锦, S2ORC;
        not 2019 or "language", which many titles or passages share). Another retrieved document is the one asked
        about when it is named by a word the top document's title lacks, and every word naming the top document
        is in its title too: "华锦股份…2019年" names 华锦 (and 2019, which 建新 holds more of, but both titles
        hold), while "Is S2ORC big enough to pretrain a language model?" stays with S2ORC although h2oGPT's
        "Democratizing Large Language Models" holds more of its words.
        """
        candidates = list(dict.fromkeys(doc_id_of(n) for n in nodes if doc_id_of(n)))
        if len(candidates) < 2:
            return candidates[0] if candidates else ""
        in_title = {doc: subject_words(question, _subject(chunks_of(doc)[:1])) for doc in candidates}
        names = {doc: {word for word in words if self._holder is None or self._holder(word) == doc}
                 for doc, words in in_title.items()}
        top = candidates[0]
        named = [doc for doc in candidates[1:] if names[doc] - in_title[top] and names[top] <= in_title[doc]]
        return max(named, key=lambda doc: len(names[doc])) if named else top  # ties: retrieval's order


def _file_of(chunks: Sequence[Any]) -> str:
    return str(getattr(chunks[0], "file_name", "") or "") if chunks else ""


def _retrieved_within(section: list[Any], nodes: Sequence[NodeWithScore]) -> list[Any]:
    """A section's passages: its opening, then those retrieval ranked for the question, then the rest in order.

    A question may name a part inside the section ("第四节里的“概述”", "the last part of chapter 8 comparing GBDT
    and XGBoost"); the budget keeps only the first few passages of a long section, so the ones retrieval found
    for the question's own words come before the rest of its parts.
    """
    if not section:
        return section
    rank = {n.node.node_id: i for i, n in enumerate(nodes)}
    found = sorted((c for c in section[1:] if c.chunk_id in rank), key=lambda c: rank[c.chunk_id])
    return [section[0]] + found + [c for c in section[1:] if c.chunk_id not in rank]


def _subject(chunks: Sequence[Any]) -> str:
    """What names a document: the start of its first passage (where a title is) and its file name."""
    if not chunks:
        return ""
    first = chunks[0]
    file_name = str(getattr(first, "file_name", "") or "")
    return f"{str(getattr(first, 'text', ''))[:SUBJECT_CHARS]} {file_name.replace('_', ' ').replace('-', ' ')}"

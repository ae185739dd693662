"""From an answer's cited sentences to citations: the supporting quote and its rectangles on the page."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Sequence

from rag.answer.citations import CitedSentence, best_quote, infer_source
from rag.answer.highlight import PAGE_SEPARATOR, locate_passage
from rag.answer.types import Citation, Source
from rag.documents import Chunk, Page

logger = logging.getLogger(__name__)


def locate_citations(store: Any, sentences: Sequence[CitedSentence], sources: Sequence[Source]) -> list[Citation]:
    """One ``Citation`` per (sentence, cited source); sentences without a marker are matched by overlap.

    When the model marked some sentences, an unmarked one needs a closer match (0.6 of its content words)
    than when it marked none (0.4), because then the unmarked ones are usually connecting prose.
    """
    by_number = {s.n: s for s in sources}
    explicit = any(s.numbers for s in sentences)
    wanted: list[tuple[str, Source, bool]] = []
    for sentence in sentences:
        if sentence.numbers:
            wanted.extend((sentence.text, by_number[n], False) for n in sentence.numbers if n in by_number)
        else:
            inferred = infer_source(sentence.text, sources, min_overlap=0.6 if explicit else 0.4)
            if inferred is not None:
                wanted.append((sentence.text, inferred, True))
    chunks = store.keywords.get(list({s.chunk_id for _, s, _ in wanted}))
    pages: dict[str, Any] = {}
    citations = []
    for sentence, source, inferred in wanted:
        quote = best_quote(sentence, source.text)
        chunk = chunks.get(source.chunk_id)
        located = []
        if chunk is not None:
            try:
                if chunk.doc_id not in pages:
                    pages[chunk.doc_id] = store.pages(chunk.doc_id)
                located = locate_passage(store, _as_given(chunk, source, pages[chunk.doc_id]), quote,
                                         pages=pages[chunk.doc_id])
            except Exception as exc:  # noqa: BLE001 - a missing highlight must not lose the answer
                logger.warning("highlight for %s failed: %s", source.chunk_id, exc)
        citations.append(Citation(
            n=source.n, doc_id=source.doc_id, file_name=source.file_name,
            page=int(located[0][0] if located else source.page_start), text=quote,
            highlights=located[0][1] if located else [], chunk_id=source.chunk_id, sentence=sentence,
            pages=located, inferred=inferred))
    return citations


def _as_given(chunk: Chunk, source: Source, pages: Sequence[Page]) -> Chunk:
    """The chunk as the source gave it to the LLM: widened to all parts of a folded table, so a quote from any
    part is found (``rag.retrieval.table_fold``)."""
    if source.char_start is None or source.char_end is None or (
            (source.char_start, source.char_end) == (chunk.char_start, chunk.char_end)):
        return chunk
    text = PAGE_SEPARATOR.join(page.text for page in pages)[source.char_start:source.char_end]
    return replace(chunk, text=text, char_start=source.char_start, char_end=source.char_end,
                   page_start=source.page_start, page_end=source.page_end)

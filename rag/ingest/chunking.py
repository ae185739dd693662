"""Cut a ``ParsedDocument`` into ``Chunk``s with one of five strategies.

All strategies work on offsets into ``doc.full_text`` (see ``rag.text.splitting``), so every chunk's text
is exactly ``full_text[char_start:char_end]`` and its pages and heading path follow from the offsets.

* ``recursive``: paragraphs, lines, sentences, clauses, words, characters; packed with overlap.
* ``sentence``: whole sentences packed together; overlap in whole sentences.
* ``section``: never crosses a detected heading; recursive inside each section.
* ``semantic``: breaks where neighbouring sentences' embeddings differ most (90th percentile).
* ``parent_child``: small chunks for retrieval, each carrying the larger passage around it.

Tables (``ParsedDocument.table_spans``, Markdown blocks the PDF parser already cut to the chunk
size, repeating caption and header row) are chunks of their own, ``kind="table"``, whatever the
strategy: the strategies only ever see the text between tables, so no chunk mixes prose and cells.
"""

from __future__ import annotations

import bisect
import logging
import math
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from rag.config import ChunkingConfig
from rag.documents import Chunk, ParsedDocument, Section
from rag.ingest.table_continuation import continued_contexts
from rag.text.language import count_tokens, detect_language
from rag.text.splitting import pack, recursive_split, sentences, trim
from rag.text.table_captions import caption_below, has_labelled_caption, lead_in_before

log = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], np.ndarray]
SEMANTIC_PERCENTILE = 90.0
HEADING_SEPARATOR = " > "


@dataclass
class _Draft:
    start: int
    end: int
    heading_path: str | None = None  # None: derive from the sections before ``start``
    parent_id: str = ""
    parent_text: str = ""
    kind: str = "text"


Spans = list[tuple[int, int]]


def chunk_document(doc: ParsedDocument, doc_id: str, config: ChunkingConfig, *,
                   embed_fn: EmbedFn | None = None) -> list[Chunk]:
    """Split ``doc`` into chunks with ``config.strategy``.

    Args:
        doc: The parsed document.
        doc_id: Prefix of every ``chunk_id`` (``f"{doc_id}:{index:05d}"``).
        config: Strategy, ``chunk_size`` and ``chunk_overlap`` in tokens, ``parent_chunk_size``.
        embed_fn: Texts to an ``(n, dim)`` array; required by the ``semantic`` strategy only.

    Raises:
        ValueError: unknown strategy, or ``semantic`` without ``embed_fn``.
    """
    config.validate()
    text = doc.full_text
    tables = doc.table_spans()
    free = _between(len(text), tables)
    size, overlap = config.chunk_size, config.chunk_overlap
    strategies: dict[str, Callable[[], list[_Draft]]] = {
        "recursive": lambda: [d for a, b in free for d in _recursive(text, a, b, size, overlap)],
        "sentence": lambda: [d for a, b in free for d in _sentence(text, config, a, b)],
        "section": lambda: _section(doc, text, config, free),
        "semantic": lambda: [d for a, b in free for d in _semantic(text, config, embed_fn, a, b)],
        "parent_child": lambda: _parent_child(text, doc_id, config, free),
    }
    if config.strategy not in strategies:
        raise ValueError(f"unknown chunking strategy {config.strategy!r}; "
                         f"choose one of {', '.join(strategies)}")
    drafts = strategies[config.strategy]()
    for start, end in tables:  # a table row longer than the chunk size is still cut to fit
        drafts += [_Draft(d.start, d.end, kind="table") for d in _recursive(text, start, end, size, 0)]
    chunks = _finish(doc, doc_id, sorted(drafts, key=lambda draft: draft.start))
    log.debug("%s: %d %s chunks", doc.file_name, len(chunks), config.strategy)
    return chunks


def heading_paths(sections: list[Section]) -> list[str]:
    """The "Intro > Method" path of each section, nesting by level."""
    stack: list[Section] = []
    paths = []
    for section in sections:
        while stack and stack[-1].level >= section.level:
            stack.pop()
        stack.append(section)
        paths.append(HEADING_SEPARATOR.join(item.title for item in stack))
    return paths


def _recursive(text: str, start: int, end: int, size: int, overlap: int) -> list[_Draft]:
    pieces = recursive_split(text, start, end, size)
    return [_Draft(a, b) for a, b in pack(text, pieces, size, overlap)]


def _between(length: int, tables: Spans) -> Spans:
    """The spans of ``[0, length)`` outside every table."""
    free, position = [], 0
    for start, end in sorted(tables):
        if start > position:
            free.append((position, start))
        position = max(position, end)
    if position < length:
        free.append((position, length))
    return free


def _sentence(text: str, config: ChunkingConfig, start: int, end: int) -> list[_Draft]:
    pieces = sentences(text, start, end, config.chunk_size)
    spans = pack(text, pieces, config.chunk_size, config.chunk_overlap, partial_overlap=False)
    return [_Draft(a, b) for a, b in spans]


def _section(doc: ParsedDocument, text: str, config: ChunkingConfig, free: Spans) -> list[_Draft]:
    sections = sorted(doc.sections, key=lambda section: section.offset)
    paths = heading_paths(sections)
    bounds = [min(max(section.offset, 0), len(text)) for section in sections]
    segments = [(0, bounds[0] if bounds else len(text), doc.title or doc.file_name, "")]
    for index, (section, path) in enumerate(zip(sections, paths)):
        end = bounds[index + 1] if index + 1 < len(bounds) else len(text)
        segments.append((bounds[index], end, path, section.title))
    drafts: list[_Draft] = []
    for segment_start, segment_end, path, title in segments:
        for free_start, free_end in free:
            start, end = trim(text, max(segment_start, free_start), min(segment_end, free_end))
            body = text[start:end]
            if start >= end or (title and count_tokens(body) <= count_tokens(title)):
                continue  # empty, or a heading directly followed by its first subheading
            for draft in _recursive(text, start, end, config.chunk_size, config.chunk_overlap):
                draft.heading_path = path
                drafts.append(draft)
    return drafts


def _semantic(text: str, config: ChunkingConfig, embed_fn: EmbedFn | None, start: int, end: int) -> list[_Draft]:
    if embed_fn is None:
        raise ValueError("the semantic chunking strategy needs an embedder: pass embed_fn "
                         "(a function from texts to an array of embeddings)")
    units = [piece for piece in sentences(text, start, end, config.chunk_size)
             if text[piece.start:piece.end].strip()]
    if not units:
        return []
    groups = [units]
    if len(units) > 2:
        texts = [text[unit.start:unit.end].strip() for unit in units]
        vectors = np.asarray(embed_fn(texts), dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(units):
            raise ValueError(f"embed_fn returned shape {vectors.shape} for {len(units)} sentences; "
                             "expected (sentences, dimensions)")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1.0, norms)
        distances = 1.0 - np.sum(vectors[:-1] * vectors[1:], axis=1)
        threshold = float(np.percentile(distances, SEMANTIC_PERCENTILE))
        breaks = [index + 1 for index, distance in enumerate(distances) if distance > threshold]
        groups = [units[a:b] for a, b in zip([0, *breaks], [*breaks, len(units)])]
    drafts: list[_Draft] = []
    for group in groups:
        drafts.extend(_Draft(a, b) for a, b in pack(text, group, config.chunk_size, 0))
    return drafts


def _parent_child(text: str, doc_id: str, config: ChunkingConfig, free: Spans) -> list[_Draft]:
    drafts: list[_Draft] = []
    parents = [d for a, b in free for d in _recursive(text, a, b, config.parent_chunk_size, 0)]
    for number, parent in enumerate(parents):
        start, end = trim(text, parent.start, parent.end)
        if start >= end:
            continue
        parent_id = f"{doc_id}:parent:{number:05d}"
        for child in _recursive(text, start, end, config.chunk_size, config.chunk_overlap):
            child.parent_id, child.parent_text = parent_id, text[start:end]
            drafts.append(child)
    return drafts


def _finish(doc: ParsedDocument, doc_id: str, drafts: list[_Draft]) -> list[Chunk]:
    """Trim, drop empty drafts, and fill in ids, pages, languages and heading paths."""
    text = doc.full_text
    page_starts = doc.page_offsets()
    sections = sorted(doc.sections, key=lambda section: section.offset)
    section_starts = [section.offset for section in sections]
    paths = heading_paths(sections)
    tables = doc.table_spans()
    continued = continued_contexts(doc) if tables else {}
    chunks: list[Chunk] = []
    for draft in drafts:
        start, end = trim(text, draft.start, draft.end)
        if start >= end or not count_tokens(text[start:end]):
            continue
        if draft.heading_path is None:
            index = bisect.bisect_right(section_starts, start) - 1
            draft.heading_path = paths[index] if index >= 0 else ""
        first_page = doc.pages[max(bisect.bisect_right(page_starts, start) - 1, 0)].number
        last_page = doc.pages[max(bisect.bisect_right(page_starts, end - 1) - 1, 0)].number
        chunk_text = text[start:end]
        chunks.append(Chunk(
            chunk_id=f"{doc_id}:{len(chunks):05d}", doc_id=doc_id, file_name=doc.file_name,
            text=chunk_text, index=len(chunks), page_start=first_page, page_end=last_page,
            char_start=start, char_end=end, language=detect_language(chunk_text),
            heading_path=draft.heading_path, parent_id=draft.parent_id, parent_text=draft.parent_text,
            kind=draft.kind, context=_context(doc, text, tables, start, continued) if draft.kind == "table" else "",
        ))
    return chunks


def _context(doc: ParsedDocument, text: str, tables: Spans, start: int, continued: dict[int, str]) -> str:
    """A table chunk's search context: the document's title (else its file name's words), the caption and
    header of the table it continues from the page before (``rag.ingest.table_continuation``), and the
    sentence above the table that introduces it (``rag.text.table_captions.lead_in_before``) and, for a table
    whose own caption lines hold no "Table N", a caption paragraph right above or below it
    (``caption_below``)."""
    title = " ".join((doc.title or "").split())
    title = title or " ".join(re.split(r"[\W_]+", doc.file_name.rsplit(".", 1)[0])).strip()
    inside = bisect.bisect_right(tables, (start, math.inf)) - 1  # the table span holding start, if any
    within = inside >= 0 and start < tables[inside][1]
    table_start, table_end = tables[inside] if within else (start, start)
    borrow = not has_labelled_caption(text, table_start)  # else captions nearby belong to other tables
    parts = (title, continued.get(table_start, ""), lead_in_before(text, tables, start, captions=borrow),
             caption_below(text, tables, table_end) if within and borrow else "")
    return "\n".join(part for part in parts if part)

"""Model output as Markdown that keeps harmless formatting and shows everything else as text.

The answer is parsed with markdown-it (CommonMark plus GFM tables and strikethrough) and written back
out: paragraphs, emphasis, lists, quotes, code, tables and rules keep their Markdown; every piece of
text is escaped (``rag.text.escape``); links, images and autolinks become code spans holding their
literal source, so the browser never gets an ``<img>`` or ``<a>`` from a document or the model; raw
HTML is parsed as text (``html=False``). Reference definitions are not parsed, so ``[a][1]`` and
``[1]: http://…`` stay literal. Any prefix of a stream is valid input, so a streamed answer can be
re-rendered through this after every chunk.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

from rag.text.escape import code_span, escape_inline

_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable(["reference"])
# keep destinations as written: they are shown, never followed (and javascript: stays visible too)
_PARSER.validateLink = lambda url: True
_PARSER.normalizeLink = lambda url: url
_PARSER.normalizeLinkText = lambda url: url
_EMPHASIS = {"em": "*", "strong": "**", "s": "~~"}
_ALIGN = {"text-align:left": ":---", "text-align:right": "---:", "text-align:center": ":---:"}


def safe_markdown(text: str) -> str:
    """``text`` (model output) as Markdown with no live link, image or HTML.

    Args:
        text: Markdown written by the model, possibly echoing a document; possibly incomplete.
    """
    root = SyntaxTreeNode(_PARSER.parse(str(text)))
    return "\n\n".join(block for block in (_block(node) for node in root.children) if block)


def _block(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind == "paragraph":
        return _inline_of(node)
    if kind == "heading":
        inner = _inline_of(node)
        return f"**{inner}**" if inner else ""
    if kind in ("bullet_list", "ordered_list"):
        return _list(node)
    if kind == "blockquote":
        inner = "\n\n".join(b for b in (_block(child) for child in node.children) if b)
        return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))
    if kind in ("fence", "code_block"):
        return _code_block(node.content, node.info if kind == "fence" else "")
    if kind == "hr":
        return "---"
    if kind == "table":
        return _table(node)
    return escape_inline(node.content)  # nothing else is enabled; kept as text if it ever appears


def _list(node: SyntaxTreeNode) -> str:
    loose = any(p.type == "paragraph" and not p.hidden for item in node.children for p in item.children)
    start = int(node.attrs.get("start", 1)) if node.type == "ordered_list" else 0
    items = []
    for number, item in enumerate(node.children, start=start):
        marker = f"{number}. " if node.type == "ordered_list" else "- "
        body = ("\n\n" if loose else "\n").join(b for b in (_block(child) for child in item.children) if b)
        lines = body.split("\n") if body else [""]
        indent = " " * len(marker)
        items.append("\n".join([marker + lines[0]] + [indent + line if line else "" for line in lines[1:]]))
    return ("\n\n" if loose else "\n").join(items)


def _code_block(content: str, info: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    fence = "`" * max(3, longest + 1)
    language = re.sub(r"[^\w+#.-]", "", info.split(" ")[0])[:20] if info else ""
    return f"{fence}{language}\n{content.rstrip(chr(10))}\n{fence}"


def _table(node: SyntaxTreeNode) -> str:
    rows: list[list[str]] = []
    aligns: list[str] = []
    for section in node.children:
        for row in section.children:
            cells = []
            for cell in row.children:
                cells.append(_inline_of(cell))
                if section.type == "thead":
                    aligns.append(_ALIGN.get(str(cell.attrs.get("style", "")), "---"))
            rows.append(cells)
    if not rows:
        return ""
    lines = ["| " + " | ".join(rows[0]) + " |", "| " + " | ".join(aligns or ["---"] * len(rows[0])) + " |"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows[1:]]
    return "\n".join(lines)


def _inline_of(node: SyntaxTreeNode) -> str:
    """The rendered inline content of a paragraph, heading or table cell."""
    return "".join(_inline(child) for inline in node.children for child in inline.children)


def _inline(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind == "text":
        return escape_inline(node.content)
    if kind == "softbreak":
        return "\n"
    if kind == "hardbreak":
        return "\\\n"
    if kind == "code_inline":
        return code_span(node.content)
    if kind in _EMPHASIS:
        inner = "".join(_inline(child) for child in node.children)
        return f"{_EMPHASIS[kind]}{inner}{_EMPHASIS[kind]}" if inner.strip() else inner
    if kind in ("link", "image"):
        return code_span(_source(node))
    return escape_inline(node.content)


def _source(node: SyntaxTreeNode) -> str:
    """The Markdown a link or image was written as (near enough), to show instead of following it."""
    kind = node.type
    if kind == "text":
        return node.content
    if kind in ("softbreak", "hardbreak"):
        return " "
    if kind == "code_inline":
        return f"{node.markup}{node.content}{node.markup}"
    inner = "".join(_source(child) for child in node.children)
    if kind in _EMPHASIS:
        return f"{node.markup}{inner}{node.markup}"
    if kind == "link" and node.markup == "autolink":
        return f"<{node.attrs.get('href', '')}>"
    if kind in ("link", "image"):
        target = str(node.attrs.get("href" if kind == "link" else "src", ""))
        title = node.attrs.get("title")
        suffix = f' "{title}"' if title else ""
        return f"{'!' if kind == 'image' else ''}[{inner}]({target}{suffix})"
    return node.content

"""What an ingest returns, and the checks a file name must pass before anything is stored."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.ingest.parse import SUPPORTED_EXTENSIONS


class IngestError(ValueError):
    """A file was refused before anything was stored."""


@dataclass
class IngestResult:
    file_name: str
    status: str  # completed, searchable (vectors follow in the background, or stopped: see error), failed, duplicate
    doc_id: str = ""
    error: str = ""
    pages: int = 0
    chunks: int = 0
    language: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    ocr_pages: str = ""  # "1-3, 7": pages read by OCR
    tables: int = 0
    notes: list[str] = field(default_factory=list)  # what some pages lost, and why
    busy: bool = False  # refused because another writer held the library or the document; try again later

    @property
    def ok(self) -> bool:
        """Stored and searchable (every vector stored, or still being stored in the background)."""
        return self.status == "completed" or (self.status == "searchable" and not self.error)


def validate_file_name(name: str) -> str:
    """Reject names that could escape the storage folder or carry markup into the UI."""
    if not name or not name.strip():
        raise IngestError("the file has no name")
    if "/" in name or "\\" in name or "\x00" in name:
        raise IngestError(f"file name “{name}” contains a path separator; upload the file itself, not a path")
    if name in (".", "..") or ".." in name:
        raise IngestError(f"file name “{name}” contains '..'; rename the file")
    if re.search(r"[<>]", name):
        raise IngestError(f"file name “{name}” contains HTML characters (< or >); rename the file")
    if len(name) > 255:
        raise IngestError("file name is longer than 255 characters; rename the file")
    if not name.lower().endswith(SUPPORTED_EXTENSIONS):
        raise IngestError(f"{name}: unsupported file type; supported: {', '.join(SUPPORTED_EXTENSIONS)}")
    return name.strip()

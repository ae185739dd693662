"""OCR for PDF pages without a text layer: Tesseract through PyMuPDF, every word with its box.

MuPDF carries Tesseract inside it; what a machine must provide is Tesseract's language data
(Debian's ``tesseract-ocr-eng``, ``-chi-sim``, ``-chi-tra``), found by ``find_tessdata`` without
assuming one folder. The OCR'd page becomes the same ``RawLine`` blocks a text page gives, so the
page text, word offsets and highlights work exactly as on text pages, with two differences that
matter for Chinese:

* each CJK character is its own word (its own box), so a highlight that starts or ends inside a run
  of Chinese lands on the right characters without searching a text layer the scan does not have;
* Tesseract puts spaces between CJK characters and splits one printed line into several; spaces next
  to CJK characters are dropped, and pieces of one visual line are rejoined left to right.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

import pymupdf

from rag.ingest.ocr_probe import PROBE_BAND, PROBE_LANGUAGES, probe_script, script_of  # noqa: F401 - re-exported
from rag.ingest.pdf_layout import TEXT_FLAGS, RawLine, RawWord, clean_text
from rag.text.language import CJK_IDEOGRAPHS

logger = logging.getLogger(__name__)

ALL_PACKAGES = ("tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-chi-sim", "tesseract-ocr-chi-tra")
INSTALL_HINT = f"install Debian's {' '.join(ALL_PACKAGES)} (apt-get install -y {' '.join(ALL_PACKAGES)})"
_SEARCH_PATTERNS = ("/usr/share/tesseract-ocr/*/tessdata", "/usr/share/tessdata", "/usr/local/share/tessdata",
                    "/usr/local/share/tesseract-ocr/*/tessdata", "/opt/homebrew/share/tessdata")
_CJK_CHAR_RE = re.compile(f"[{CJK_IDEOGRAPHS}\u3000-\u303f\uff00-\uffef]")


class OcrUnavailableError(RuntimeError):
    """Tesseract's language data is missing; the message names the Debian package(s) to install."""


def package_for(language: str) -> str:
    """The Debian package holding a Tesseract language (``chi_sim`` -> ``tesseract-ocr-chi-sim``)."""
    return "tesseract-ocr-" + language.replace("_", "-")


def find_tessdata(explicit: str = "", *, env: Mapping[str, str] | None = None,
                  patterns: tuple[str, ...] = _SEARCH_PATTERNS, ask_tesseract: bool = True) -> Path:
    """The folder holding ``*.traineddata``.

    Args:
        explicit: A folder to use; wins over everything else when it holds language data.
        env: Where ``TESSDATA_PREFIX`` is read. Defaults to ``os.environ``.
        patterns: Glob patterns of the usual install folders, newest version first when several match.
        ask_tesseract: Also ask ``tesseract --list-langs`` (when the binary is on PATH) where its data is.

    Raises:
        OcrUnavailableError: no folder with language data was found; the message says what to install.
    """
    env = os.environ if env is None else env
    candidates = [explicit, env.get("TESSDATA_PREFIX", "")]
    if ask_tesseract:
        candidates.append(_tesseract_reported_folder())
    for pattern in patterns:
        candidates.extend(sorted(glob.glob(pattern), reverse=True))
    for candidate in candidates:
        if candidate and any(Path(candidate).glob("*.traineddata")):
            return Path(candidate)
    raise OcrUnavailableError(f"OCR needs Tesseract's language data and none was found; {INSTALL_HINT}, "
                              "or set TESSDATA_PREFIX to a tessdata folder")


def require_languages(tessdata: Path, languages: str) -> None:
    """Raise ``OcrUnavailableError`` naming the package of every language ``tessdata`` lacks."""
    missing = [name for name in languages.split("+") if not (tessdata / f"{name}.traineddata").is_file()]
    if missing:
        packages = " ".join(package_for(name) for name in missing)
        raise OcrUnavailableError(f"OCR language data for {', '.join(missing)} is missing from {tessdata}; "
                                  f"install Debian's {packages} (apt-get install -y {packages})")


def needs_ocr(pdf_page: pymupdf.Page, text: str) -> bool:
    """True for a page with no text layer that still shows something (a scan, or outlined glyphs)."""
    if text.strip():
        return False
    try:
        return bool(pdf_page.get_images(full=False)) or bool(pdf_page.get_cdrawings())
    except RuntimeError:  # a broken content stream: there is nothing OCR could be sure to render either
        return False


def ocr_textpage(pdf_page: pymupdf.Page, languages: str, dpi: int, tessdata: Path) -> pymupdf.TextPage:
    """Render the whole page at ``dpi`` and read it with Tesseract."""
    return pdf_page.get_textpage_ocr(flags=TEXT_FLAGS, language=languages, dpi=dpi, full=True,
                                     tessdata=str(tessdata))


def ocr_layout(textpage: pymupdf.TextPage) -> list[list[RawLine]]:
    """Blocks of visual lines from an OCR text page, one ``RawWord`` per Latin word or CJK character."""
    blocks: list[list[RawLine]] = []
    for block in textpage.extractRAWDICT()["blocks"]:
        pieces = [{"bbox": line["bbox"], "chars": [char for span in line["spans"] for char in span["chars"]]}
                  for line in block.get("lines", [])]
        lines = []
        for row in _rows([piece for piece in pieces if piece["chars"]]):
            words = _words([char for piece in row for char in piece["chars"]])
            if words:
                lines.append(RawLine(words=words, size=0.0, bold=False))
        if lines:
            blocks.append(lines)
    return blocks


def _rows(pieces: list[dict]) -> list[list[dict]]:
    """Tesseract's pieces of lines grouped into printed lines, top to bottom, each left to right.

    Pieces of one printed line share most of their height band; they may even overlap horizontally
    (uncertain segmentation around rare characters). A row is only cut where a gap wider than 1.5
    line heights separates its pieces: that is a column gutter, not a space.
    """
    bands: list[list[dict]] = []
    for piece in sorted(pieces, key=lambda item: (item["bbox"][1], item["bbox"][0])):
        x0, y0, x1, y1 = piece["bbox"]
        for band in reversed(bands[-3:]):
            top = min(p["bbox"][1] for p in band)
            bottom = max(p["bbox"][3] for p in band)
            if min(bottom, y1) - max(top, y0) > 0.5 * min(bottom - top, y1 - y0):
                band.append(piece)
                break
        else:
            bands.append([piece])
    rows: list[list[dict]] = []
    for band in sorted(bands, key=lambda b: min(p["bbox"][1] for p in b)):
        band.sort(key=lambda p: p["bbox"][0])
        height = max(max(p["bbox"][3] for p in band) - min(p["bbox"][1] for p in band), 1.0)
        rows.append([band[0]])
        for piece in band[1:]:
            if piece["bbox"][0] - max(p["bbox"][2] for p in rows[-1]) > 1.5 * height:
                rows.append([piece])
            else:
                rows[-1].append(piece)
    return rows


def _words(chars: list[dict]) -> list[RawWord]:
    """Latin words split at spaces, CJK characters one word each; spaces next to CJK are dropped."""
    words: list[RawWord] = []
    current: list[dict] = []
    spaced = False  # a space came since the last word

    def flush() -> None:
        nonlocal current, spaced
        text = clean_text("".join(char["c"] for char in current))
        if text:
            boxes = [char["bbox"] for char in current]
            box = (round(min(b[0] for b in boxes), 2), round(min(b[1] for b in boxes), 2),
                   round(max(b[2] for b in boxes), 2), round(max(b[3] for b in boxes), 2))
            words.append(RawWord(text, box, join=_join(words[-1].text if words else "", text, spaced)))
            spaced = False
        current = []

    for char in chars:
        if char["c"].isspace():
            flush()
            spaced = True
        elif _CJK_CHAR_RE.match(char["c"]):
            flush()
            current = [char]
            flush()
        else:
            current.append(char)
    flush()
    return _join_digit_runs(words)


def _join(previous: str, text: str, spaced: bool) -> str:
    if not previous:
        return ""
    if _CJK_CHAR_RE.match(previous[-1]) or _CJK_CHAR_RE.match(text[0]):
        return ""  # Chinese is written without spaces; Tesseract's are noise
    return " " if spaced else ""


def _join_digit_runs(words: list[RawWord]) -> list[RawWord]:
    """In a line of Chinese, "1 2 0 0" is Tesseract spacing out one number: join single characters."""
    cjk = sum(1 for word in words if _CJK_CHAR_RE.match(word.text))
    if cjk * 2 < len(words):
        return words
    for index in range(1, len(words)):
        if len(words[index].text) == 1 and len(words[index - 1].text) == 1 and words[index].text.isalnum() \
                and words[index - 1].text.isalnum():
            words[index].join = ""
    return words


def tesseract_version() -> str:
    """``tesseract 5.3.0`` when the command-line tool is installed, else empty (for reports only)."""
    binary = shutil.which("tesseract")
    if not binary:
        return ""
    try:
        result = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (result.stdout or result.stderr).splitlines()[0].strip() if (result.stdout or result.stderr) else ""


def _tesseract_reported_folder() -> str:
    binary = shutil.which("tesseract")
    if not binary:
        return ""
    try:
        result = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.debug("tesseract --list-langs failed: %s", exc)
        return ""
    match = re.search(r'List of available languages in "(.+?)"', result.stdout + result.stderr)
    return match.group(1) if match else ""

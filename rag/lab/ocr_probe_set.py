"""``python -m rag.lab.ocr_probe_set``: how often the OCR language probe picks the right Chinese script.

The probe set never shares text with ``bench ocr`` (CMRC2018 / SQuAD): it is made of

* real layouts: pages of the Chinese PDFs in ``../shared/data/pdfs/zh`` (annual reports with tables
  and headers, a textbook with formulas, a tutorial), rendered as scans in their own fonts
  (simplified), and the same pages with every line of text replaced in place by its OpenCC ``s2t``
  conversion in PyMuPDF's ``china-t`` font, ruling lines and pictures kept (traditional);
* CAIL2019-CJRC court-judgment contexts set on a page in both scripts, at several font sizes, some
  under a Latin title line.

Every page is scanned at one of several resolutions (grayscale, no text layer) and given to
``rag.ingest.ocr.probe_script``. Prints the accuracy per script, the pages it got wrong, and the
probe's time per page with the load average.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pymupdf

from rag.ingest.ocr import find_tessdata, probe_script

logger = logging.getLogger(__name__)

DEFAULT_DATA_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared beside the repo
SCAN_DPIS = (100, 150, 200, 300)
FONT_SIZES = (9.0, 10.5, 12.0, 14.0)
LATIN_TITLES = ("Annual Report 2019", "Case No. 2019-0347 (Civil Judgment)", "Chapter 3 Linear Models",
                "APPENDIX B", "Section 4.2 Results")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_MIN_CJK = 120  # a real page with fewer Chinese characters (a cover, a table of figures) is left out


@dataclass
class ProbePage:
    name: str  # where the page came from, for the report
    script: str  # the truth: chi_sim or chi_tra
    pdf: bytes  # a one-page scan without a text layer


def build_pages(data_root: Path, *, real_pages: int = 6, judgments: int = 8, seed: int = 0) -> list[ProbePage]:
    """The probe set: ``real_pages`` per Chinese PDF and ``judgments`` CJRC contexts, each in both scripts.

    Args:
        data_root: The shared data folder (``pdfs/zh`` and ``cail2019-cjrc-dev`` are read).
        real_pages: Pages sampled from each PDF among those with enough Chinese text.
        judgments: CJRC contexts set on a page of their own.
        seed: Sampling seed; resolutions, font sizes and titles are drawn from it too.
    """
    import opencc  # lab only: the traditional pages are converted text

    converter = opencc.OpenCC("s2t")
    rng = random.Random(seed)
    pages: list[ProbePage] = []
    for path in sorted((data_root / "pdfs" / "zh").glob("*.pdf")):
        with pymupdf.open(path) as doc:
            usable = [number for number in range(doc.page_count)
                      if len(_CJK.findall(doc[number].get_text())) >= _MIN_CJK]
            for number in sorted(rng.sample(usable, min(real_pages, len(usable)))):
                name = f"{path.stem[:28]} p{number + 1}"
                dpi = rng.choice(SCAN_DPIS)
                pages.append(ProbePage(name, "chi_sim", _scan(doc, number, dpi)))
                pages.append(ProbePage(name + " (s2t)", "chi_tra", _scan(_retyped(doc, number, converter.convert),
                                                                           0, rng.choice(SCAN_DPIS))))
    data = json.loads((data_root / "cail2019-cjrc-dev" / "dev_ground_truth.json").read_text(encoding="utf-8"))
    contexts = [p["context"] for article in data["data"] for p in article["paragraphs"] if len(p["context"]) > 300]
    for index, context in enumerate(rng.sample(contexts, judgments)):
        title = rng.choice(LATIN_TITLES) if index % 2 else ""
        size = rng.choice(FONT_SIZES)
        for script, font, text in (("chi_sim", "china-s", context), ("chi_tra", "china-t", converter.convert(context))):
            doc = _typeset(text[:900], font, size, title)
            pages.append(ProbePage(f"CJRC #{index} {size}pt{' +title' if title else ''}", script,
                                   _scan(doc, 0, rng.choice(SCAN_DPIS))))
    return pages


def _scan(doc: pymupdf.Document, number: int, dpi: int) -> bytes:
    """Page ``number`` of ``doc`` as an image-only page of the same size, rendered in gray at ``dpi``."""
    page = doc[number]
    scan = pymupdf.open()
    scan.new_page(width=page.rect.width, height=page.rect.height).insert_image(
        pymupdf.Rect(0, 0, page.rect.width, page.rect.height), pixmap=page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY))
    return scan.tobytes(garbage=3, deflate=True)


def _retyped(doc: pymupdf.Document, number: int, convert: Callable[[str], str]) -> pymupdf.Document:
    """Page ``number`` with each Chinese span replaced in place by ``convert(text)`` in ``china-t``."""
    copy = pymupdf.open()
    copy.insert_pdf(doc, from_page=number, to_page=number)
    page = copy[0]
    spans = [span for block in page.get_text("dict")["blocks"] for line in block.get("lines", [])
             for span in line["spans"] if _CJK.search(span["text"])]  # numbers keep their own font
    for span in spans:
        page.add_redact_annot(span["bbox"])
    page.apply_redactions(images=pymupdf.PDF_REDACT_IMAGE_NONE, graphics=pymupdf.PDF_REDACT_LINE_ART_NONE)
    for span in spans:
        page.insert_text(span["origin"], convert(span["text"]), fontname="china-t", fontsize=span["size"])
    return copy


def _typeset(text: str, font: str, size: float, title: str) -> pymupdf.Document:
    """``text`` on an A4 page in ``font`` at ``size`` points, under a Latin ``title`` when one is given."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    top = 60.0
    if title:
        page.insert_text((60, 80), title, fontname="helv", fontsize=20)
        top = 110.0
    while page.insert_textbox(pymupdf.Rect(60, top, 535, 782), text, fontname=font, fontsize=size,
                              lineheight=1.4) < 0:
        text = text[: int(len(text) * 0.8)]
    return doc


def evaluate(pages: list[ProbePage], probe: Callable[[pymupdf.Page], str]) -> Iterator[dict]:
    """One row per page: the truth, what ``probe`` chose and its seconds."""
    for page in pages:
        with pymupdf.open("pdf", page.pdf) as doc:
            started = time.perf_counter()
            chosen = probe(doc[0])
            yield {"name": page.name, "script": page.script, "chosen": chosen,
                   "seconds": round(time.perf_counter() - started, 2)}


def summary(rows: list[dict]) -> list[str]:
    """Accuracy per script, the misses and the time per page, as report lines."""
    lines = ["| script | pages | probe right | accuracy |", "|---|---|---|---|"]
    for script in ("chi_sim", "chi_tra"):
        mine = [row for row in rows if row["script"] == script]
        right = sum(row["chosen"] == script for row in mine)
        lines.append(f"| {script} | {len(mine)} | {right} | {right / max(len(mine), 1):.3f} |")
    seconds = sorted(row["seconds"] for row in rows)
    if seconds:
        lines.append(f"probe time per page: median {seconds[len(seconds) // 2]:.1f} s, max {seconds[-1]:.1f} s")
    lines += [f"wrong: {row['name']} ({row['script']}) -> {row['chosen']}" for row in rows
              if row["chosen"] != row["script"]]
    return lines


def main(argv: list[str] | None = None) -> int:
    """Build the probe set, run the probe on every page and print the figures."""
    parser = argparse.ArgumentParser(prog="python -m rag.lab.ocr_probe_set")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--real-pages", type=int, default=6, help="pages per Chinese PDF")
    parser.add_argument("--judgments", type=int, default=8, help="CJRC contexts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.data_root / "pdfs" / "zh").is_dir():
        parser.error(f"{args.data_root / 'pdfs' / 'zh'} not found; the probe set is made from ../shared/data")
    tessdata = find_tessdata()
    pages = build_pages(args.data_root, real_pages=args.real_pages, judgments=args.judgments, seed=args.seed)
    start_load = _loadavg()
    rows = []
    for row in evaluate(pages, lambda page: probe_script(page, tessdata)):
        logger.info("%s", row)
        rows.append(row)
    print(f"OCR language probe on {len(pages)} pages (seed {args.seed}); load average {start_load} at the start, "
          f"{_loadavg()} at the end")
    print("\n".join(summary(rows)))
    return 0


def _loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "?"


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    raise SystemExit(main())

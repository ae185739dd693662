"""``python -m rag.lab bench ocr``: OCR character accuracy, speed and highlight placement on generated scans.

Pages are filled with real text the OCR settings were never tuned on: SQuAD v1.1 dev paragraphs for
English, CMRC2018 dev contexts for simplified Chinese, and other CMRC2018 contexts converted to
traditional Chinese (OpenCC s2t) — sampled with ``--seed``. Each page is set in PyMuPDF's fonts,
rendered to a grayscale image at ``--scan-dpi`` and parsed back through the real parser, which OCRs it
(``ingest.ocr_languages`` auto unless ``--set`` says otherwise). Prints the load average beside the speed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from rag.config import RagConfig
from rag.ingest.options import ParseOptions
from rag.ingest.parse import parse_file
from rag.lab.ocr_scans import HighlightCheck, char_accuracy, compare_highlights, make_scan, make_text_pdf

DEFAULT_DATA_ROOT = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared beside the repo
SCRIPTS = ("en", "zh-s", "zh-t")
PAGE_CHARS = {"en": 2600, "zh-s": 1300, "zh-t": 1300}  # about a full page at 11 pt


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench ocr")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--pages", type=int, default=6, help="pages per script")
    parser.add_argument("--scan-dpi", type=int, default=150, help="resolution of the generated scans")
    parser.add_argument("--scripts", default=",".join(SCRIPTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [run_script(script, args, config) for script in args.scripts.split(",")]
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    if args.json:
        print(json.dumps({"rows": rows, "loadavg": load}, ensure_ascii=False, indent=2))
    else:
        print(format_rows(rows, args, load))
    return 0


def run_script(script: str, args: argparse.Namespace, config: RagConfig) -> dict:
    paragraphs = _paragraphs(script, args.data_root, args.seed)
    pages = _fill_pages(paragraphs, PAGE_CHARS[script], args.pages)
    chinese = script != "en"
    options = ParseOptions.from_config(config)
    with tempfile.TemporaryDirectory(prefix="citewise-ocr-") as tmp:
        text_pdf = make_text_pdf(pages, Path(tmp) / f"{script}.pdf", script)
        scan_pdf = make_scan(text_pdf, Path(tmp) / f"{script}-scan.pdf", dpi=args.scan_dpi)
        reference = parse_file(text_pdf, options=options)
        started = time.perf_counter()
        scanned = parse_file(scan_pdf, options=options)
        seconds = time.perf_counter() - started
    errors = characters = 0
    highlights = HighlightCheck()
    for ref_page, ocr_page in zip(reference.pages, scanned.pages):
        page_errors, page_chars = char_accuracy(ref_page.text, ocr_page.text, chinese=chinese)
        errors, characters = errors + page_errors, characters + page_chars
        check = compare_highlights(ref_page, ocr_page, chinese=chinese)
        highlights.phrases += check.phrases
        highlights.on_target += check.on_target
    return {"script": script, "pages": len(scanned.pages), "ocr_pages": len(scanned.ocr_pages),
            "languages": scanned.ocr_languages, "characters": characters,
            "char_accuracy": round(1 - errors / max(characters, 1), 4), "seconds": round(seconds, 1),
            "pages_per_s": round(len(scanned.pages) / seconds, 3), "highlight_phrases": highlights.phrases,
            "highlight_on_target": round(highlights.on_target / max(highlights.phrases, 1), 4),
            "notes": scanned.notes}


def format_rows(rows: list[dict], args: argparse.Namespace, load: list[str]) -> str:
    lines = [f"OCR on generated scans ({args.pages} pages per script, scans at {args.scan_dpi} dpi, seed "
             f"{args.seed}; load average {' '.join(load)})", "",
             "| script | pages (OCR'd) | languages | characters | char accuracy | pages/s | "
             "highlight phrases | highlights on target |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['script']} | {row['pages']} ({row['ocr_pages']}) | {row['languages']} | "
                     f"{row['characters']} | {row['char_accuracy']:.4f} | {row['pages_per_s']:.2f} | "
                     f"{row['highlight_phrases']} | {row['highlight_on_target']:.3f} |")
    notes = [f"- {row['script']}: {note}" for row in rows for note in row["notes"]]
    return "\n".join(lines + (["", "Notes:"] + notes if notes else []))


def _paragraphs(script: str, data_root: Path, seed: int) -> list[str]:
    rng = random.Random(seed + SCRIPTS.index(script))
    if script == "en":
        data = json.loads((data_root / "squad-v1.1-dev.json").read_text(encoding="utf-8"))
    else:
        data = json.loads((data_root / "cmrc2018-dev.json").read_text(encoding="utf-8"))
    texts = [" ".join(p["context"].split()) for article in data["data"] for p in article["paragraphs"]]
    rng.shuffle(texts)
    if script == "zh-t":
        import opencc  # lab only: the traditional pages are CMRC2018 text converted, not a second dataset

        converter = opencc.OpenCC("s2t")
        texts = [converter.convert(text) for text in texts[:200]]
    return texts


def _fill_pages(paragraphs: list[str], page_chars: int, count: int) -> list[list[str]]:
    pages: list[list[str]] = []
    source = iter(paragraphs)
    while len(pages) < count:
        page: list[str] = []
        for paragraph in source:
            if sum(len(p) for p in page) + len(paragraph) > page_chars:
                if not page:
                    page.append(paragraph[:page_chars])
                break
            page.append(paragraph)
        if not page:
            break
        pages.append(page)
    return pages

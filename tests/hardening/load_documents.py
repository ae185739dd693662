"""Documents and questions for the load suite: generated PDFs of distinct facts, in English and Chinese.

Every fact is a sentence of its own ("In 2011, the Harbour plant in Lisbon recycled 412 tonnes of
glass."), and every question asks for one fact in other words, so each of the 400 questions is
distinct (no retrieval cache hit hides the work) and has a passage that answers it. Contents are a
pure function of the arguments, so runs are repeatable.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pymupdf

CITIES = ("Lisbon", "Oslo", "Kraków", "Tampere", "Porto", "Ghent", "Leeds", "Lyon", "Graz", "Bergen", "Turku", "Malmö")
PLANTS = ("Harbour", "Northgate", "Riverside", "Eastfield", "Hillcrest", "Westbrook", "Lakeside", "Southpoint")
MATERIALS = ("glass", "paper", "steel", "aluminium", "copper", "plastic", "timber", "textiles")
CITIES_ZH = ("北京", "上海", "广州", "深圳", "成都", "杭州", "南京", "武汉")
PLANTS_ZH = ("东港", "北门", "河畔", "西溪", "山顶", "湖滨")
MATERIALS_ZH = ("玻璃", "纸张", "钢材", "铝材", "铜材", "塑料")
FACTS_PER_PAGE = 12


@dataclass(frozen=True)
class Fact:
    sentence: str
    question: str
    language: str


def facts(seed: int, count: int, language: str = "en") -> list[Fact]:
    """``count`` distinct facts (and their questions) drawn with ``seed``."""
    rng = random.Random(seed)
    out: list[Fact] = []
    seen: set[tuple] = set()
    while len(out) < count:
        year, amount = rng.randint(1990, 2024), rng.randint(100, 9999)
        if language == "zh":
            key = (rng.choice(CITIES_ZH), rng.choice(PLANTS_ZH), rng.choice(MATERIALS_ZH), year)
            sentence = f"{year}年，{key[0]}的{key[1]}工厂回收了{amount}吨{key[2]}。"
            question = f"{year}年{key[0]}的{key[1]}工厂回收了多少吨{key[2]}？"
        else:
            key = (rng.choice(CITIES), rng.choice(PLANTS), rng.choice(MATERIALS), year)
            sentence = f"In {year}, the {key[1]} plant in {key[0]} recycled {amount} tonnes of {key[2]}."
            question = f"How many tonnes of {key[2]} did the {key[1]} plant in {key[0]} recycle in {year}?"
        if key not in seen:
            seen.add(key)
            out.append(Fact(sentence, question, language))
    return out


def write_pdf(path: Path, sentences: list[str], *, title: str, chinese: bool = False) -> Path:
    """A PDF with ``FACTS_PER_PAGE`` sentences per page under ``title``."""
    document = pymupdf.open()
    font = "china-s" if chinese else "helv"
    for start in range(0, len(sentences), FACTS_PER_PAGE):
        page = document.new_page()
        page.insert_text((72, 60), title, fontname=font, fontsize=14)
        body = ("" if chinese else " ").join(sentences[start:start + FACTS_PER_PAGE])
        page.insert_textbox(pymupdf.Rect(72, 80, page.rect.width - 72, page.rect.height - 60), body,
                            fontname=font, fontsize=10)
    document.set_metadata({"title": title})
    document.save(path)
    document.close()
    return path


@dataclass
class LoadCorpus:
    """The library uploaded before the questions, the questions, and a maker of documents to ingest during them."""

    library: list[Path]
    questions: list[Fact]
    directory: Path

    def upload(self, number: int, pages: int = 12) -> Path:
        """A fresh document (its own facts, so never a duplicate) to ingest while the questions run."""
        sentences = [f.sentence for f in facts(10_000 + number, pages * FACTS_PER_PAGE)]
        return write_pdf(self.directory / f"recycling-report-{number:03d}.pdf", sentences,
                         title=f"Recycling report {number}")


def make_corpus(directory: Path, *, questions: int, chinese_share: float = 0.125) -> LoadCorpus:
    """Library PDFs holding at least ``questions`` facts (about ``chinese_share`` of them in Chinese)."""
    directory.mkdir(parents=True, exist_ok=True)
    chinese = int(questions * chinese_share)
    english = facts(1, questions - chinese, "en")
    mandarin = facts(2, chinese, "zh") if chinese else []
    library = []
    half = len(english) // 2
    for number, chunk in enumerate((english[:half], english[half:]), start=1):
        library.append(write_pdf(directory / f"recycling-{number}.pdf", [f.sentence for f in chunk],
                                 title=f"Municipal recycling, volume {number}"))
    if mandarin:
        library.append(write_pdf(directory / "recycling-zh.pdf", [f.sentence for f in mandarin], title="城市回收年报",
                                 chinese=True))
    rng = random.Random(3)
    asked = english + mandarin
    rng.shuffle(asked)
    return LoadCorpus(library, asked, directory)

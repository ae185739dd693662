"""Question sets with real unanswerable questions: the paragraph is in the library but does not hold the answer.

Readers, with a fixed tune/report split each (tune gates and thresholds on ``tune``, report on ``report``):

* ``squad2``: SQuAD 2.0 train, first 10 articles (``is_impossible`` questions with ``plausible_answers``).
  All its unanswerables are in two articles, so the split is by article: tune = The Legend of Zelda:
  Twilight Princess, report = Spectre (2015 film); each split's library is its own article's paragraphs
  plus distractor paragraphs from the other eight articles.
* ``cjrc``: CAIL 2019 reading comprehension dev (Chinese, legal). Clean labels only (README of the data):
  unanswerable = ``is_impossible`` "true" with three empty answers; answerable = "false" with three span
  answers (YES/NO answers are left out: "the answer contains a gold answer" cannot judge them). Split by
  case: even case positions tune, odd report.
* ``ace-whqa`` (has-answer + both IDK files), ``cuad`` and any SQuAD 2.0-format path: split by paragraph,
  even positions tune, odd report.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from rag.evaluation.answer_library import QAItem
from rag.evaluation.datasets import DEFAULT_DATA_ROOT

logger = logging.getLogger(__name__)

SPLITS = ("tune", "report")
SQUAD2_FILE = "squad2-train-first10/train-v2.0_first10articles.json"
CJRC_FILE = "cail2019-cjrc-dev/dev_ground_truth.json"
ACE_FILES = ("ace-whqa/ACE-whQA-has-answer.json", "ace-whqa/ACE-whQA-IDK-competitive.json",
             "ace-whqa/ACE-whQA-IDK-non-competitive.json")
CUAD_FILE = "cuad-train-sample/cuad_sample.json"
SQUAD2_SPLIT_ARTICLES = {"tune": "The_Legend_of_Zelda:_Twilight_Princess", "report": "Spectre_(2015_film)"}
UNANSWERABLE_SETS = ("squad2", "cjrc", "ace-whqa", "cuad")


@dataclass
class QASet:
    """One split of a set: its questions (answerable and not), every paragraph, and which to index.

    Args:
        name: The set's name.
        split: "tune" or "report".
        items: The split's questions; ``QAItem.impossible`` marks the unanswerable ones.
        paragraphs: Paragraph key -> text, for every paragraph that may be indexed.
        core: The split's own paragraphs (those its questions are about), always indexed.
        distractors: Other paragraphs the library may add (never holding a split question's paragraph).
    """

    name: str
    split: str
    items: list[QAItem]
    paragraphs: dict[str, str]
    core: list[str]
    distractors: list[str]


def load_set(name: str, split: str, data_root: Path = DEFAULT_DATA_ROOT) -> QASet:
    """The ``split`` part of the set ``name`` (``squad2``, ``cjrc``, ``ace-whqa``, ``cuad`` or a path).

    Raises:
        FileNotFoundError: A data file is missing (the message names it).
        ValueError: An unknown split.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if name == "squad2":
        return _squad2(_read(data_root / SQUAD2_FILE), split)
    if name == "cjrc":
        return _cjrc(_read(data_root / CJRC_FILE), split)
    if name == "ace-whqa":
        articles = [a for file in ACE_FILES for a in _read(data_root / file)["data"]]
        return _by_position({"data": articles}, name, split)
    if name == "cuad":
        return _by_position(_read(data_root / CUAD_FILE), name, split)
    return _by_position(_read(Path(name)), Path(name).stem, split)


def _read(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"dataset file {path} not found (see ../shared/data/README.md)")
    return json.loads(path.read_text(encoding="utf-8"))


def _flag(value: object) -> bool:
    return value is True or str(value).lower() == "true"


def _qa_items(qa: dict, key: str, article: int) -> QAItem | None:
    """A question of a SQuAD 2.0-format paragraph, or None for a stray header row."""
    question = str(qa.get("question", "")).strip()
    if not question or question == "Question":
        return None
    impossible = _flag(qa.get("is_impossible"))
    answers = [str(a.get("text", "")) for a in qa.get("answers", []) if str(a.get("text", "")).strip()]
    if not impossible and not answers:
        return None
    plausible = [str(a.get("text", "")) for a in qa.get("plausible_answers", []) if a.get("text")]
    return QAItem(str(qa.get("id", f"{key}-{question[:20]}")), question, plausible if impossible else answers,
                  key, article, impossible=impossible)


def _squad2(data: dict, split: str) -> QASet:
    items, paragraphs, core, distractors = [], {}, [], []
    for a, article in enumerate(data["data"]):
        mine = article.get("title") == SQUAD2_SPLIT_ARTICLES[split]
        other_split = article.get("title") in SQUAD2_SPLIT_ARTICLES.values() and not mine
        for p, paragraph in enumerate(article["paragraphs"]):
            key = f"{a}-{p}"
            paragraphs[key] = paragraph["context"]
            if mine:
                core.append(key)
                items.extend(i for i in (_qa_items(qa, key, a) for qa in paragraph["qas"]) if i is not None)
            elif not other_split:
                distractors.append(key)
    return QASet("squad2", split, items, paragraphs, core, distractors)


def _cjrc(data: dict, split: str) -> QASet:
    items, paragraphs, core = [], {}, []
    for a, case in enumerate(data["data"]):
        if (a % 2 == 0) != (split == "tune"):
            continue
        for p, paragraph in enumerate(case["paragraphs"]):
            key = f"{a}-{p}"
            paragraphs[key] = paragraph["context"]
            core.append(key)
            for qa in paragraph["qas"]:
                texts = [str(x.get("text", "")) for x in qa.get("answers", [])]
                impossible = _flag(qa.get("is_impossible"))
                if impossible and texts and not any(t.strip() for t in texts):
                    items.append(QAItem(str(qa["id"]), qa["question"], [], key, a, impossible=True))
                elif (not impossible and len(texts) >= 3 and all(t.strip() for t in texts)
                      and not any(t in ("YES", "NO") for t in texts)):
                    items.append(QAItem(str(qa["id"]), qa["question"], list(dict.fromkeys(texts)), key, a))
    # distractors are the split's other cases: the library holds only this split's passages
    return QASet("cjrc", split, items, paragraphs, core, [])


def _by_position(data: dict, name: str, split: str) -> QASet:
    items, paragraphs, core, distractors = [], {}, [], []
    position = 0
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article["paragraphs"]):
            key = f"{a}-{p}"
            if paragraph.get("context", "").strip() in ("", "Text"):
                continue
            paragraphs[key] = paragraph["context"]
            if (position % 2 == 0) == (split == "tune"):
                core.append(key)
                items.extend(i for i in (_qa_items(qa, key, a) for qa in paragraph["qas"]) if i is not None)
            else:
                distractors.append(key)
            position += 1
    return QASet(name, split, items, paragraphs, core, distractors)

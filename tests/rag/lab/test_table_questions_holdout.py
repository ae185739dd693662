"""All table-question files are well-formed: unique ids, known splits, and every question's row label
and value printed on its page of the shared PDFs; each held-out set repeats no cell of the files before it, and
none sits on a development page (the tune split, then the first held-out set) of the files before it.

The page check compares as ``rag/lab/bench_tables.py`` does (whitespace removed) on PyMuPDF's
``page.get_text()``; it is skipped only when ``../shared/data/pdfs`` is absent from this checkout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf
import pytest

from rag.lab import bench_tables
from rag.lab.debian_docs import DEBIAN_DOCS_DIR, DOCS, missing
from tests.conftest import SHARED_DATA

DATA = Path(__file__).resolve().parents[3] / "rag" / "lab" / "data"
# In the order they were written: each held-out file must repeat no (file, page, row) of the ones before it.
FILES = {"table_questions.json": {"tune", "test"}, "table_questions_holdout.json": {"holdout"},
         "table_questions_holdout2.json": {"holdout2"}, "table_questions_holdout3.json": {"holdout3"},
         "table_questions_holdout4.json": {"holdout4"}, "table_questions_holdout5.json": {"holdout5"},
         "table_questions_holdout6.json": {"holdout6"}, "table_questions_holdout7.json": {"holdout7"},
         "table_questions_holdout8.json": {"holdout8"}, "table_questions_holdout9.json": {"holdout9"},
         "table_questions_holdout10.json": {"holdout10"}, "table_questions_holdout11.json": {"holdout11"},
         "table_questions_holdout12.json": {"holdout12"}, "table_questions_holdout13.json": {"holdout13"},
         "table_questions_holdout14.json": {"holdout14"}, "table_questions_holdout15.json": {"holdout15"},
         "table_questions_holdout16.json": {"holdout16"}, "table_questions_holdout17.json": {"holdout17"},
         "table_questions_holdout18.json": {"holdout18"}, "table_questions_holdout19.json": {"holdout19"},
         "table_questions_holdout20.json": {"holdout20"}, "table_questions_holdout21.json": {"holdout21"},
         "table_questions_holdout22.json": {"holdout22"}, "table_questions_holdout23.json": {"holdout23"},
         "table_questions_holdout24.json": {"holdout24"}, "table_questions_holdout25.json": {"holdout25"},
         "table_questions_holdout26.json": {"holdout26"}, "table_questions_holdout27.json": {"holdout27"},
         "table_questions_holdout28.json": {"holdout28"}}
HELD_OUT = [name for name in FILES if name != "table_questions.json"]  # in the order they were written
PDF_ROOT = SHARED_DATA / "pdfs"
FIELDS = {"id", "split", "file", "page", "question", "row", "answer"}
DEBIAN_NAMES = {doc.name for doc in DOCS}


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


QUESTIONS = [(name, question) for name in FILES for question in _load(name)["questions"]]
needs_pdfs = pytest.mark.skipif(not PDF_ROOT.is_dir(),
                                reason=f"dataset-scale test: the shared PDFs ({PDF_ROOT}) are not in this checkout")


@pytest.mark.parametrize("name", FILES)
def test_ids_are_unique_and_splits_known(name: str) -> None:
    data = _load(name)
    ids = [question["id"] for question in data["questions"]]
    assert data["about"].strip()
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for question in data["questions"]:
        assert FIELDS <= question.keys(), (question["id"], FIELDS - question.keys())
        assert question["split"] in FILES[name], question["id"]
        assert isinstance(question["page"], int) and question["page"] >= 1, question["id"]
        assert all(question[key].strip() for key in ("question", "row", "answer")), question["id"]


def test_the_bench_runs_every_held_out_file_in_the_order_written() -> None:
    assert [path.name for path in bench_tables.HELD_OUT.values()] == HELD_OUT
    assert all(FILES[name] <= set(bench_tables.SPLITS) for name in HELD_OUT)  # the split its questions carry


def test_ids_are_unique_across_all_files() -> None:
    ids = [question["id"] for _, question in QUESTIONS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", HELD_OUT)
def test_holdout_repeats_no_earlier_cell(name: str) -> None:
    earlier = list(FILES)[:list(FILES).index(name)]
    used = {(q["file"], q["page"], q["row"]) for file in earlier for q in _load(file)["questions"]}
    repeated = [q["id"] for q in _load(name)["questions"] if (q["file"], q["page"], q["row"]) in used]
    assert not repeated


def test_holdout2_uses_no_page_of_the_earlier_files() -> None:
    """The second held-out set was written only on pages that no earlier question uses."""
    used = {(q["file"], q["page"]) for file in list(FILES)[:2] for q in _load(file)["questions"]}
    reused = [q["id"] for q in _load("table_questions_holdout2.json")["questions"] if (q["file"], q["page"]) in used]
    assert not reused


def test_holdout3_uses_no_development_page() -> None:
    """The third held-out set may share pages with the reported test split and holdout2, never with tuned-on ones."""
    tuned = [q for q in _load("table_questions.json")["questions"] if q["split"] == "tune"]
    tuned += _load("table_questions_holdout.json")["questions"]
    used = {(q["file"], q["page"]) for q in tuned}
    reused = [q["id"] for q in _load("table_questions_holdout3.json")["questions"] if (q["file"], q["page"]) in used]
    assert not reused


@pytest.mark.parametrize("name", ["table_questions_holdout4.json", "table_questions_holdout5.json"])
def test_later_holdouts_use_no_page_of_any_earlier_file(name: str) -> None:
    """The fourth and fifth held-out sets were written after every earlier set had been looked at, on pages none
    of them uses."""
    earlier = list(FILES)[:list(FILES).index(name)]
    used = {(q["file"], q["page"]) for file in earlier for q in _load(file)["questions"]}
    reused = [q["id"] for q in _load(name)["questions"] if (q["file"], q["page"]) in used]
    assert not reused


@pytest.mark.parametrize("name", HELD_OUT)
def test_holdout_paraphrased_flag_matches_the_wording(name: str) -> None:
    """A copied question holds the printed label (case and spacing aside); a paraphrased one does not."""
    questions = _load(name)["questions"]
    assert all(isinstance(q.get("paraphrased"), bool) for q in questions)
    wrong = [q["id"] for q in questions
             if q["paraphrased"] == (_squeeze(q["row"]).lower() in _squeeze(q["question"]).lower())]
    assert not wrong


@pytest.fixture(scope="module")
def pdf_pages():
    """Squeezed text of every page of a shared or fetched Debian PDF by file name, read once per module."""
    cache: dict[str, list[str]] = {}

    def pages(file: str) -> list[str]:
        if file not in cache:
            if file in DEBIAN_NAMES:
                if missing():
                    pytest.skip(f"dataset-scale test: the Debian documents are not in {DEBIAN_DOCS_DIR} "
                                "(python -m rag.lab.debian_docs fetches them)")
                found = [DEBIAN_DOCS_DIR / file]
            else:
                found = sorted(PDF_ROOT.glob(f"*/{file}"))
            assert found, f"{file} is not under {PDF_ROOT}"
            with pymupdf.open(found[0]) as doc:
                cache[file] = [_squeeze(page.get_text()) for page in doc]
        return cache[file]

    return pages


@needs_pdfs
@pytest.mark.parametrize("name,question", QUESTIONS, ids=[f"{name[:-5]}:{q['id']}" for name, q in QUESTIONS])
def test_row_and_answer_are_printed_on_the_page(name: str, question: dict, pdf_pages) -> None:
    pages = pdf_pages(question["file"])
    assert question["page"] <= len(pages), f"{question['file']} has {len(pages)} pages"
    text = pages[question["page"] - 1]  # pages are 1-based in the files, as the ingested chunks' page_start
    assert _squeeze(question["row"]) in text, f"row {question['row']!r} not on page {question['page']}"
    assert _squeeze(question["answer"]) in text, f"answer {question['answer']!r} not on page {question['page']}"


@pytest.mark.parametrize("name", HELD_OUT[HELD_OUT.index("table_questions_holdout6.json"):])
def test_debian_holdouts_read_only_pinned_documents_no_earlier_set_used(name: str) -> None:
    """The sixth and later held-out sets were written on documents no earlier set or change had seen."""
    files = {q["file"] for q in _load(name)["questions"]}
    assert files <= DEBIAN_NAMES
    earlier = {q["file"] for file in HELD_OUT[:HELD_OUT.index(name)] for q in _load(file)["questions"]}
    assert not files & earlier

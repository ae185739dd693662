from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.evaluation.datasets import EvalDataset, load_beir, load_csv, load_dataset, load_squad

from tests.conftest import SHARED_DATA  # noqa: E402


def _write_beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "10", "title": "Aspirin", "text": "Aspirin reduces fever."}\n'
        '{"_id": "11", "title": "", "text": "Unrelated abstract."}\n\n', encoding="utf-8")
    (folder / "queries.jsonl").write_text(
        '{"_id": "1", "text": "Does aspirin reduce fever?", "metadata": {}}\n'
        '{"_id": "2", "text": "Unjudged claim."}\n'
        '{"_id": "3", "text": "Train claim."}\n', encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n1\t11\t0\n", encoding="utf-8")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n3\t11\t2\n", encoding="utf-8")
    return folder


def _squad_json(path: Path, version: str = "1.1") -> Path:
    data = {"version": version, "data": [
        {"title": "Art0", "paragraphs": [
            {"context": "Paris is the capital of France.", "qas": [
                {"id": "qa1", "question": "What is the capital of France?",
                 "answers": [{"text": "Paris", "answer_start": 0}]},
                {"id": "qa2", "question": "Which country has Paris?", "answers": []}]},
            {"context": "Berlin is in Germany.",
             "qas": [{"id": "qa3", "question": "Where is Berlin?", "answers": []}]}]},
        {"title": "Art1", "id": "DEV_1", "paragraphs": [  # CMRC 2018 style: ids on articles and paragraphs
            {"id": "DEV_1_P", "context": "北京是中国的首都。",
             "qas": [{"id": "DEV_1_QUERY_0", "question": "中国的首都是哪里？"}]}]},
    ]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_load_beir_keeps_judged_queries(tmp_path: Path) -> None:
    dataset = load_beir(_write_beir(tmp_path / "tiny"))

    assert dataset.name == "tiny"
    assert dataset.corpus["10"] == {"title": "Aspirin", "text": "Aspirin reduces fever."}
    assert dataset.queries == {"1": "Does aspirin reduce fever?"}
    assert dataset.qrels == {"1": {"10": 1, "11": 0}}
    assert load_beir(tmp_path / "tiny", split="train").qrels == {"3": {"11": 2}}


def test_load_beir_missing_file_names_it(tmp_path: Path) -> None:
    folder = _write_beir(tmp_path / "tiny")
    (folder / "qrels" / "test.tsv").unlink()

    with pytest.raises(FileNotFoundError, match="qrels/test.tsv"):
        load_beir(folder)


def test_load_squad_paragraphs_are_documents(tmp_path: Path) -> None:
    dataset = load_squad(_squad_json(tmp_path / "mini.json"))

    assert list(dataset.corpus) == ["0-0", "0-1", "1-0"]
    assert dataset.corpus["1-0"] == {"title": "Art1", "text": "北京是中国的首都。"}
    assert dataset.queries["qa2"] == "Which country has Paris?"
    assert dataset.qrels == {"qa1": {"0-0": 1}, "qa2": {"0-0": 1}, "qa3": {"0-1": 1}, "DEV_1_QUERY_0": {"1-0": 1}}
    assert dataset.name == "mini"


def test_load_csv_with_pages(tmp_path: Path) -> None:
    path = tmp_path / "questions.csv"
    path.write_text("\ufeffQuestion,Expected_Document,Expected_Page\n"
                    "What is S2ORC?,acl2020.pdf,3\n"
                    '"Revenue, Q1?",uber.pdf,"4; 5"\n'
                    ",skipped.pdf,1\n"
                    "No page?,x.pdf,\n", encoding="utf-8")

    dataset = load_csv(path)

    assert dataset.queries == {"q1": "What is S2ORC?", "q2": "Revenue, Q1?", "q4": "No page?"}
    assert dataset.qrels["q2"] == {"uber.pdf": 1}
    assert dataset.gold_pages == {"q1": [3], "q2": [4, 5], "q4": []}
    assert dataset.corpus == {}


def test_load_csv_requires_columns(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("q,doc\nx,y\n", encoding="utf-8")

    with pytest.raises(ValueError, match="question"):
        load_csv(path)


def test_load_dataset_resolves_names_and_paths(tmp_path: Path) -> None:
    _write_beir(tmp_path / "beir-scifact")
    _squad_json(tmp_path / "squad-v1.1-dev.json")
    _squad_json(tmp_path / "cmrc2018-dev.json", version="v1.0")
    (tmp_path / "set.csv").write_text("question,expected_document,expected_page\nq?,a.pdf,1\n", encoding="utf-8")

    assert load_dataset("scifact", tmp_path).name == "scifact"
    assert load_dataset("SQuAD", tmp_path).name == "squad"
    assert len(load_dataset("cmrc2018", tmp_path).queries) == 4
    assert load_dataset(tmp_path / "beir-scifact").queries == {"1": "Does aspirin reduce fever?"}
    assert load_dataset(str(tmp_path / "set.csv")).name == "set"
    with pytest.raises(FileNotFoundError, match="known names"):
        load_dataset("nq", tmp_path)
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError):
        load_dataset(tmp_path / "notes.txt")


def test_subset_is_reproducible(tmp_path: Path) -> None:
    dataset = load_squad(_squad_json(tmp_path / "mini.json"))

    small = dataset.subset(2, seed=1)

    assert len(small.queries) == 2 and set(small.qrels) == set(small.queries)
    assert small.queries == dataset.subset(2, seed=1).queries
    assert small.corpus is dataset.corpus
    assert dataset.subset(99) is dataset
    assert isinstance(small, EvalDataset)


@pytest.mark.skipif(not SHARED_DATA.exists(), reason=f"shared evaluation data not present at {SHARED_DATA}")
@pytest.mark.parametrize("name,docs,queries", [("scifact", 5183, 300), ("squad", 2067, 10570),
                                               ("cmrc2018", 848, 3219)], ids=["scifact", "squad", "cmrc2018"])
def test_real_datasets_have_the_published_counts(name: str, docs: int, queries: int) -> None:
    dataset = load_dataset(name, SHARED_DATA)

    assert (len(dataset.corpus), len(dataset.queries)) == (docs, queries)
    assert set(dataset.qrels) == set(dataset.queries)
    assert all(doc in dataset.corpus for qrel in dataset.qrels.values() for doc in qrel)
    if name == "scifact":
        assert sum(len(q) for q in dataset.qrels.values()) == 339


def test_bad_items_are_left_out_and_counted_never_fatal(tmp_path: Path) -> None:
    folder = _write_beir(tmp_path / "bad")
    (folder / "queries.jsonl").write_text(
        '{"_id": "1", "text": "Does aspirin reduce fever?"}\n'
        '{"_id": "1", "text": "A second claim with a repeated id."}\n'
        '{"_id": "4", "text": "   "}\n'
        '{"_id": "5", "text": "Claim whose document is gone."}\n', encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\t10\t1\n4\t10\t1\n5\t999\t1\n6\t10\t1\nnot a qrel line\n", encoding="utf-8")

    dataset = load_beir(folder)

    assert dataset.queries == {"1": "Does aspirin reduce fever?"}
    assert dataset.skipped == {"duplicate question id": 1, "empty question": 1,
                               "qrels naming a document not in the corpus": 1,
                               "judged question missing from queries.jsonl": 1, "unreadable qrels line": 1}
    assert dataset.skipped_note().startswith("skipped 5 item(s): ")

    squad = json.loads(_squad_json(tmp_path / "s.json").read_text(encoding="utf-8"))
    qas = squad["data"][0]["paragraphs"][0]["qas"]
    qas += [{"id": "qa1", "question": "Repeated id?"}, {"id": "e1", "question": ""}, {"id": "e2", "question": " "}]
    (tmp_path / "s.json").write_text(json.dumps(squad), encoding="utf-8")
    loaded = load_squad(tmp_path / "s.json")
    assert loaded.skipped == {"duplicate question id": 1, "empty question": 2}
    assert loaded.queries["qa1"] == "What is the capital of France?" and "e1" not in loaded.queries


def _articles_json(path: Path, titles: list[str]) -> Path:
    data = {"data": [{"title": title, "paragraphs": [
        {"context": f"{title} paragraph {p}.", "qas": [{"id": f"{title}-{p}-{q}", "question": f"{title} {p} {q}?"}
                                                      for q in range(2)]} for p in range(2)]} for title in titles]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_squad_style_sets_split_by_article_alternating_in_title_order(tmp_path: Path) -> None:
    path = _articles_json(tmp_path / "squad-v1.1-dev.json", ["Delta", "Alpha", "Charlie", "Bravo", "Echo"])

    tune = load_dataset("squad", tmp_path, split="tune")
    report = load_dataset("squad", tmp_path, split="report")

    titles = lambda d: {d.corpus[next(iter(g))]["title"] for g in d.qrels.values()}  # noqa: E731
    assert titles(tune) == {"Alpha", "Charlie", "Echo"} and titles(report) == {"Bravo", "Delta"}
    assert len(tune.queries) == 12 and len(report.queries) == 8
    assert set(tune.queries).isdisjoint(report.queries)
    assert tune.corpus == report.corpus == load_dataset(path).corpus  # both halves search every paragraph
    assert (tune.split, report.split) == ("tune", "report")
    assert load_dataset("squad", tmp_path, split="tune").queries == tune.queries  # deterministic


def test_split_errors_name_what_each_kind_of_set_has(tmp_path: Path) -> None:
    _write_beir(tmp_path / "beir-scifact")
    _articles_json(tmp_path / "cmrc2018-dev.json", ["甲", "乙"])

    assert load_dataset("scifact", tmp_path, split="train").split == "train"
    with pytest.raises(ValueError, match="own splits"):
        load_dataset("scifact", tmp_path, split="tune")
    with pytest.raises(ValueError, match="tune / report"):
        load_dataset("cmrc2018", tmp_path, split="train")
    with pytest.raises(ValueError, match="unknown split"):
        load_dataset("cmrc2018", tmp_path, split="halves")


def test_the_traditional_set_holds_the_same_questions_per_half_in_traditional_script(tmp_path: Path) -> None:
    data = {"data": [{"title": title, "paragraphs": [{"context": context, "qas": [{"id": qid, "question": question}]}]}
                     for title, context, qid, question in [
                         ("锣鼓经", "锣鼓经是传统器乐的记谱方法。", "a", "锣鼓经是什么？"),
                         ("软件", "软件公司在网络上发布信息。", "b", "谁在网络上发布信息？"),
                         ("头发", "头发的生长速度。", "c", "头发长得多快？")]]}
    (tmp_path / "cmrc2018-dev.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    for split in ("tune", "report"):
        simplified = load_dataset("cmrc2018", tmp_path, split=split)
        traditional = load_dataset("cmrc2018-tw", tmp_path, split=split)
        assert traditional.name == "cmrc2018-tw" and traditional.qrels == simplified.qrels
    traditional = load_dataset("cmrc2018-tw", tmp_path)
    assert traditional.queries["a"] == "鑼鼓經是什麼？"
    assert traditional.corpus["1-0"] == {"title": "軟體", "text": "軟體公司在網路上釋出資訊。"}

"""The broad topic replay's ranking figure and what of a question's gold its passages reach."""

from __future__ import annotations

from rag.answer.types import Source
from rag.lab.broad_topic import auc, choose_line, passage_reach


def test_auc_ranks_answerable_above_unanswerable_and_counts_ties_half() -> None:
    assert auc([0.9, 0.5], [0.5, 0.1]) == 0.875  # three wins and a tie out of four pairs
    assert auc([0.2], [0.8]) == 0.0 and auc([], [0.3]) is None


def test_the_chosen_line_catches_the_most_unanswerable_questions_within_the_false_abstention_bound() -> None:
    rows = [{"share": 0.9, "p_yes": 0.9, "answerable": True}, {"share": 0.3, "p_yes": 0.8, "answerable": True},
            {"share": None, "p_yes": 0.7, "answerable": True}, {"share": 0.2, "p_yes": 0.2, "answerable": False},
            {"share": 0.6, "p_yes": 0.1, "answerable": False}]
    by_weight = {line["w_yes"]: line for line in choose_line(rows, (0.0, 0.5), 0.3)}
    # share alone: refusing the 0.6 row would also refuse the answerable 0.3 row (false 1/3 > 0.3), so only the 0.2
    # row is caught
    assert by_weight[0.0]["abstention"] == 0.5 and by_weight[0.0]["false"] == 0.0
    # half P(yes): both unanswerables (0.2, 0.35) score under every answerable one (0.55 and up), no false refusal
    assert by_weight[0.5]["abstention"] == 1.0 and by_weight[0.5]["false"] == 0.0
    # a looser bound lets the share alone catch both, at one false refusal
    assert choose_line(rows, (0.0,), 0.34)[0]["abstention"] == 1.0


def test_passage_reach_counts_a_gold_page_inside_a_passages_range_and_key_terms_in_either_script() -> None:
    sources = [Source(n=1, chunk_id="a", doc_id="d", file_name="f.pdf", page_start=3, page_end=4,
                      text="The Limitations section admits the Web search engine is a black box."),
               Source(n=2, chunk_id="b", doc_id="d", file_name="f.pdf", page_start=9, page_end=9, text="关联采购占比")]
    question = {"pages": [4, 12], "key_terms": ["black box", ["關聯採購", "关联采购"], "reward model", "BLEU"]}
    assert passage_reach(question, sources) == {"gold_page": True, "terms_found": 0.5}
    assert passage_reach({**question, "pages": [5]}, sources)["gold_page"] is False
    assert passage_reach({**question, "absent": ["x"]}, sources) == {}  # nothing to reach on an unanswerable one

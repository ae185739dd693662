"""Evidence fitting: the question's sentences of each passage, within the budget, in document order."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode

from rag.retrieval.broad import named_section
from rag.retrieval.question_kind import is_broad
from rag.retrieval.evidence import GAP, fit_evidence
from rag.retrieval.postprocessors import ContextBudgetPostprocessor
from rag.text.language import count_tokens

FILLER = "The committee met on a rainy afternoon to discuss the budget of the coming year."


def _node(node_id: str, text: str) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=node_id, text=text, metadata={"doc_id": "d"}), score=1.0)


def test_the_answer_sentence_of_a_lower_ranked_passage_survives_a_budget_whole_chunks_would_spend() -> None:
    first = _node("a", " ".join([FILLER] * 6))
    second = _node("b", " ".join([FILLER] * 3 + ["Ibuprofen's maximum daily dose for adults is 1200 milligrams."]
                                 + [FILLER] * 2))
    question = "What is the maximum daily dose of ibuprofen?"
    whole = ContextBudgetPostprocessor(top_k=2, max_tokens=120).fit([first, second])
    assert [n.node.node_id for n in whole] == ["a"]  # whole chunks: the answer's chunk does not fit
    fitted = fit_evidence([first, second], question, 120, count_tokens)
    assert [n.node.node_id for n in fitted] == ["a", "b"]  # rank order kept
    text_b = fitted[1].node.get_content()
    assert text_b.startswith("Ibuprofen's maximum daily dose") and len(text_b) < len(second.node.get_content()) / 2
    assert sum(count_tokens(n.node.get_content()) + 12 for n in fitted) <= 120 + 2 * 12
    spans = fitted[1].node.metadata["evidence"]
    source = second.node.get_content()
    assert any("1200" in source[s:e] for s, e in spans)  # spans point into the chunk's own text


def test_the_sentence_after_the_best_one_comes_along_when_it_fits() -> None:
    text = "Chopin was born in Zelazowa Wola. " + FILLER + " His birth year was 1810. " + FILLER
    fitted = fit_evidence([_node("a", text)], "Where was Chopin born?", 40, count_tokens)
    excerpt = fitted[0].node.get_content()
    assert excerpt == "Chopin was born in Zelazowa Wola. " + FILLER


def test_non_adjacent_sentences_are_joined_by_a_visible_gap() -> None:
    text = "Chopin was born in Zelazowa Wola. " + FILLER + " " + FILLER + " Chopin died in Paris."
    fitted = fit_evidence([_node("a", text)], "Where was Chopin born and where did Chopin die?", 30, count_tokens)
    assert fitted[0].node.get_content() == "Chopin was born in Zelazowa Wola." + GAP + "Chopin died in Paris."


def test_an_acronym_question_keeps_the_sentence_that_spells_it_out() -> None:
    text = ("Paraphrase generation is a fundamental and long-standing task. " + FILLER +
            " We propose Retrieval Augmented Prompt Tuning (RAPT) as a parameter-efficient method.")
    rare_stand = {"rapt": 0.5, "stand": 3.0, "use": 0.2}  # RAPT in every table row, "long-standing" once

    def idf(terms):
        return {term: rare_stand.get(term, 1.0) for term in terms}

    fitted = fit_evidence([_node("a", text)], "What does RAPT stand for, and what is it used for?", 28, count_tokens,
                          idf=idf)
    assert fitted[0].node.get_content() == text[text.index("We propose"):]  # not the "long-standing" sentence
    using = " We also propose NC-RAPT, using prompt tokens for novelty control."
    fitted = fit_evidence([_node("a", text + using)], "What does RAPT stand for, and what is it used for?", 28,
                          count_tokens, idf=idf)
    assert fitted[0].node.get_content() == text[text.index("We propose"):]  # the definition, not NC-RAPT's use


def test_the_passage_that_spells_out_an_acronym_comes_first_when_asked_what_it_stands_for() -> None:
    setting = _node("a", "For RAPT we set the prefix length to eight tokens.")
    definition = _node("b", "We propose Retrieval Augmented Prompt Tuning (RAPT) for paraphrase generation.")
    asked = fit_evidence([setting, definition], "What does RAPT stand for?", 200, count_tokens)
    assert [n.node.node_id for n in asked] == ["b", "a"]
    other = fit_evidence([setting, definition], "What prefix length does RAPT use?", 200, count_tokens)
    assert [n.node.node_id for n in other] == ["a", "b"]  # rank order otherwise


def test_the_postprocessor_fits_evidence_for_a_factoid_and_whole_passages_for_a_broad_question() -> None:
    long = _node("a", " ".join([FILLER] * 4 + ["The method uses reflection tokens to decide when to retrieve."]))
    processor = ContextBudgetPostprocessor(top_k=2, max_tokens=40, evidence=True, broad_max_tokens=400)
    factoid = processor.fit([long], question="What do reflection tokens decide?")
    excerpt = factoid[0].node.get_content()
    assert "The method uses reflection tokens" in excerpt and len(excerpt) < len(long.node.get_content()) / 2
    broad = processor.fit([long], question="Summarise the paper's method.")
    assert broad[0].node.get_content() == long.node.get_content()


def test_broad_question_detection_in_english_and_chinese() -> None:
    for question in ("What problem does this paper address, and how?", "Summarise section 3",
                     "How do A and B differ?", "请总结这篇论文的主要贡献", "这两种方法有什么区别？"):
        assert is_broad(question), question
    for question in ("What is the maximum daily dose of ibuprofen?", "When was Chopin born?", "布洛芬每日最大剂量是多少？"):
        assert not is_broad(question), question
    assert named_section("Summarise section 3.2 please").number == "3.2" and named_section("When?") is None


DOSES = ("Table 1: Recommended ibuprofen doses by age group\n| Age group | Single dose (mg) | Doses per day |\n"
         "| --- | --- | --- |\n| Children 6-11 years | 100 | 3 |\n| Adolescents 12-17 years | 200 | 3 |\n"
         "| Adults 18-64 years | 400 | 3 |")


def _table(node_id: str, text: str) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=node_id, text=text, metadata={"doc_id": "d", "kind": "table"}), score=1.0)


def test_a_table_gives_its_asked_row_under_its_header_not_its_caption() -> None:
    question = "What single dose of ibuprofen is recommended for adolescents by age group?"
    budget = count_tokens(DOSES.splitlines()[1]) + count_tokens(DOSES.splitlines()[4]) + 2 + 12

    [fitted] = fit_evidence([_table("t", DOSES)], question, budget, count_tokens)

    # the caption and header hold most of the question's words; the row is what answers, and the header names its
    # columns
    assert fitted.node.get_content() == ("| Age group | Single dose (mg) | Doses per day |" + GAP
                                         + "| Adolescents 12-17 years | 200 | 3 |")


def test_a_passage_not_marked_as_a_table_gets_no_header_carried_along() -> None:
    question = "What single dose of ibuprofen is recommended for adolescents by age group?"
    [fitted] = fit_evidence([_node("p", DOSES)], question, 20, count_tokens)
    assert "| Adolescents 12-17 years | 200 | 3 |" in fitted.node.get_content()
    assert "| Age group |" not in fitted.node.get_content()

"""The broad topic check: do the sources given for a summary name what it asks about?"""

from __future__ import annotations

from rag.answer.topic import asked_words, topic_share, topic_terms, topic_verdict
from rag.answer.types import Source


def _source(n: int, text: str) -> Source:
    return Source(n=n, chunk_id=f"c{n}", doc_id="d", file_name="paper.pdf", page_start=1, page_end=1, text=text,
                  score=1.0)


SOURCES = [_source(1, "S2ORC is a corpus of 81.1M English academic papers. We parse PDFs with GROBID and link "
                      "citations to papers."),
           _source(2, "The corpus is built from publisher PDFs and arXiv LaTeX sources.")]


def test_the_frame_of_a_request_is_not_its_topic() -> None:
    # search tokens (English stems) of the words that name the topic, and nothing of "please summarise this paper"
    assert set(topic_terms("Please summarise what this paper says about citation linking.", None)) == {"citat", "link"}


def test_a_summary_of_what_the_sources_cover_has_a_higher_share_than_one_of_what_they_never_name() -> None:
    covered = topic_share("Summarise how the corpus parses PDFs and links citations.", SOURCES, None)
    absent = topic_share("Give me an overview of the copyright and licensing side of the release.", SOURCES, None)
    assert covered.share is not None and absent.share is not None
    assert covered.share > 0.8 > 0.3 > absent.share
    assert covered.missing == [] and absent.missing


def test_only_frame_words_leave_nothing_to_check() -> None:
    assert topic_share("Summarise this paper.", SOURCES, None).share is None
    assert topic_verdict(topic_share("Summarise this paper.", SOURCES, None), 0.5, "Summarise this paper.").answerable


def test_the_verdict_refuses_under_the_minimum_and_names_the_questions_own_words() -> None:
    question = "Give me an overview of the copyright and licensing side of the release."
    verdict = topic_verdict(topic_share(question, SOURCES, None), 0.5, question)
    assert not verdict.answerable and verdict.method == "topic" and verdict.score is not None and verdict.score < 0
    assert "copyright" in verdict.reason and "licensing" in verdict.reason  # words as asked, not stems
    assert topic_verdict(topic_share(question, SOURCES, None), 0.0, question).answerable


def test_chinese_missing_words_are_shown_as_words_not_the_whole_clause() -> None:
    assert asked_words("华锦股份在新能源领域有什么布局？", ["新能源"]) == ["新能源"]
    assert asked_words("Explain the licensing terms.", ["licens"]) == ["licensing"]


def test_chinese_question_and_pointing_words_are_not_topic_words() -> None:
    # jieba keeps 哪几种 and 一步步 whole; they ask about a topic without naming it, so no source need hold them
    terms = set(topic_terms("這個專案可以選哪幾種向量模型？是怎麼一步步切換的？", None))
    assert not terms & {"哪几", "哪几种", "一步步", "步步"}
    assert "向量" in terms or "向量模型" in terms


def test_chinese_words_of_a_function_class_are_not_topic_words() -> None:
    # jieba tags 为啥 and 有些 as pronouns, 另外 a conjunction, 特别 an adverb and 几项 a numeral: none is on any list,
    # and none names what is asked
    terms = set(topic_terms("建新化工为啥有些费用降了？另外特别想知道研发投入的几项变化。", None))
    assert not terms & {"为啥", "有些", "另外", "特别", "几项"}
    assert {"化工", "费用", "研发", "投入"} <= terms
    # the nouns and verbs of what a document does not cover stay topic words
    assert {"汽油", "加油站", "零售"} <= set(topic_terms("華錦股份的汽油最後是怎麼賣出去的？有沒有加油站零售網路？", None))


def test_english_function_words_are_not_topic_words_but_a_month_is() -> None:
    terms = set(topic_terms("Where do the authors think this work should head next, and which base models sit "
                            "underneath h2oGPT?", None))
    assert not terms & {"where", "should", "next", "underneath", "which"}
    assert {"head", "base", "model", "h2ogpt"} <= terms
    # "may" is a modal verb and a month: a question about May's trips is about May
    assert {"may", "trip", "driver"} <= set(topic_terms("What happened to trips in May, and how did drivers fare?",
                                                         None))

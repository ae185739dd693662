"""Broad questions: which are broad, which section they name, and which passages they are given."""

from __future__ import annotations

from dataclasses import dataclass

from llama_index.core.schema import NodeWithScore, TextNode

from rag.retrieval.broad import SectionName, asks_about_whole_document, named_section, section_chunks
from rag.retrieval.broad_compare import compared_terms, first_mentions
from rag.retrieval.question_kind import is_broad
from rag.retrieval.postprocessors.broad import BroadQuestionPostprocessor
from rag.retrieval.query import SearchQuery
from rag.retrieval.trace import QueryTrace


@dataclass
class _Chunk:
    chunk_id: str
    text: str
    heading_path: str = ""
    file_name: str = "techreport_h2ogpt.pdf"


def _ids(chunks) -> list[str]:
    return [c.chunk_id for c in chunks]


def test_traditional_chinese_broad_questions_are_recognised_like_simplified_ones() -> None:
    for question in ("請總結這篇論文的主要貢獻", "這兩種方法有什麼區別？", "這個項目解決了什麼問題？", "請概述第三章"):
        assert is_broad(question), question
    for question in ("布洛芬每日最大劑量是多少？", "公司註冊地址在哪裡？"):
        assert not is_broad(question), question


def test_limitations_are_broad_and_a_factoid_is_not() -> None:
    assert is_broad("What limitations do the authors acknowledge?")
    assert is_broad("这种方法有哪些局限？")
    assert not is_broad("What year was the dataset released?")


def test_two_part_questions_and_questions_about_what_a_study_found_are_broad() -> None:
    # phrasings of the first blind broad set that went the factoid way (read after it was reported)
    for question in ("华锦股份的主营业务是什么？主要有哪些业务板块和产品？",
                     "建新化工2019年的營業收入比前一年變化了多少？年報認為主要原因是什麼？",
                     "公司提示了哪些经营风险，打算怎么应对？", "索引部分是怎样把文件一步步处理成向量数据库的？",
                     "What did the usability study find about reading papers with the tool?",
                     "What legal proceedings does Uber describe in this quarterly report?",
                     "Which risks are named, and which ones does it treat as material?"):
        assert is_broad(question), question
    for question in ("《方正东亚?鹰潭国丰股权投资项目单一资金信托合同》的合同编号是？",
                     "The term has been applied to western countries, and which other country?",
                     "What did Beyoncé describe as the saddest thing in her life?", "本起事故的主要原因是什么？"):
        assert not is_broad(question), question


def test_questions_that_ask_for_an_account_are_broad_and_their_factoid_look_alikes_are_not() -> None:
    # the families added after the second blind set (its four misses, read after it was reported), each written
    # here in other words than that set's
    for question in ("Explain how the retriever is trained.", "Can you walk me through the evaluation setup?",
                     "What's the gist of this report?", "What does the filing say about debt covenants?",
                     "What did the two user studies show?",
                     "What does it say about cash, and does it expect to need more funding?",
                     "How was the model tested? I'm interested in the datasets and the baselines.",
                     # the third blind set's one miss, read after its report: an apostrophe inside the second question
                     "Which metrics does the study use, and why isn't accuracy enough?",
                     "請幫我梳理一下這一章的內容", "帮我整理一下公司的风险因素", "公司对明年有什么打算？",
                     "未来的改进方向是什么？", "这个系统是怎么实现检索的？"):
        assert is_broad(question), question
    # look-alikes from the factoid sets: a word in the middle, a survey that measured a number, a plan's permit
    for question in ("What one word did the commissioner use to describe the game?",
                     "How did Tesla finance his work?", "王某是否办理了建设用地规划许可证？",
                     "被告人利用什么的原则收集整理考试试题？", "合同规定违约损失应如何处理？"):
        assert not is_broad(question), question


def test_what_people_said_how_a_thing_is_placed_and_requests_to_explain_are_broad() -> None:
    # the families added after the named-document set's four misses (read after it was reported), written here
    # in other words than that set's
    for question in ("What did the interviewees think about the new reading mode?",
                     "How does the paper position its method against earlier retrievers?",
                     "What does the prospectus disclose about the founders' pay?",
                     "Which encoder was used, and what long-context tricks did they add?",
                     "How were the features chosen? I mean the ablation appendix.",
                     "它是如何处理并发写入的？请说明其中的锁设计。", "我想了解一下这家公司的销售模式"):
        assert is_broad(question), question


def test_comparisons_lists_derivations_and_how_a_thing_is_made_are_broad() -> None:
    # the families added after the second named-document set's misses (read after it was reported), written here
    # in other words than that set's
    for question in ("How do the three retrieval settings used in the paper's ablation study really differ?",
                     "How is the distilled reranker different from the teacher it learns from?",
                     "Dense vs sparse retrieval in this report: what's the difference?",
                     "Which sections get dropped from the corpus, and why?",
                     "List the risk factors the filing names and what each one covers.",
                     "How was the classifier trained to spot duplicates?",
                     "这两个版本的接口用起来有什么不一样？", "新旧两种算法差在哪？", "書裡怎麼推導出這個公式的？"):
        assert is_broad(question), question


def test_a_question_after_one_value_is_factoid_whatever_place_it_names_first() -> None:
    # a comparison table, a summary table or a section named as where the value is (the table questions)
    for question in ("In the paper's comparison of corpora, how many documents does the largest one hold?",
                     "In the summary table of commands, what default is given for the column width?",
                     "In section 4.2, what AIC does the reduced model have?",
                     "According to the feature comparison, which language is the second tool written in?",
                     "In Beyoncé’s comparison of her tours, how many shows did the longest one have?",
                     "在各款软件的对比表中，专业版要花多少钱？", "第3章的示例表里，较晚的那一年有几名学生？"):
        assert not is_broad(question), question
    # a second thing asked, or an account asked for, keeps a question broad
    for question in ("In the comparison of corpora, how many documents does each hold, and why do they differ?",
                     "How does the tuition at private schools compare to public ones?",
                     "在对比表中，两个版本有什么区别？"):
        assert is_broad(question), question


def test_a_section_is_named_by_number_chinese_numeral_or_title() -> None:
    assert named_section("Summarise section 3.2 please") == SectionName(number="3.2")
    assert named_section("请总结第三章的主要内容") == SectionName(number="3")
    assert named_section("總結第十二章") == SectionName(number="12")
    assert named_section("Summarise the Related Work section") == SectionName(title="Related Work")
    assert named_section('What does the "Experimental Setup" section describe?') == SectionName(
        title="Experimental Setup")
    assert named_section("概述「线性模型」一章") == SectionName(title="线性模型")
    assert named_section("When was Chopin born?") is None


NUMBERED = [_Chunk("t", "Title", ""), _Chunk("a", "intro", "1 Introduction"), _Chunk("b", "m", "3 Method"),
            _Chunk("c", "m2", "3 Method > 3.1 Model"), _Chunk("d", "m3", "3 Method > 3.1 Model"),
            _Chunk("e", "m4", "3 Method > 3.2 Training"), _Chunk("f", "r", "4 Results")]
UNNUMBERED = [_Chunk("t", "Title", ""), _Chunk("x", "abs", "Abstract"), _Chunk("a", "intro", "Introduction"),
              _Chunk("b", "rw", "Related Work"), _Chunk("c", "m", "Our Method"),
              _Chunk("d", "m2", "Our Method > Reflection tokens"), _Chunk("e", "m3", "Our Method > Training"),
              _Chunk("f", "r", "Results and Analysis")]


def test_a_numbered_section_is_found_by_its_headings_and_its_parts_lead() -> None:
    assert _ids(section_chunks(NUMBERED, SectionName(number="3"))) == ["b", "c", "e", "d"]
    assert _ids(section_chunks(NUMBERED, SectionName(number="3.1"))) == ["c", "d"]
    assert section_chunks(NUMBERED, SectionName(number="2")) == []


def test_unnumbered_sections_are_counted_in_order_without_the_front_matter() -> None:
    assert _ids(section_chunks(UNNUMBERED, SectionName(number="3"))) == ["c", "d", "e"]
    assert _ids(section_chunks(UNNUMBERED, SectionName(number="3.2"))) == ["e"]
    assert section_chunks(UNNUMBERED, SectionName(number="9")) == []


def test_chinese_chapters_match_by_numeral_and_sections_by_title() -> None:
    book = [_Chunk("p", "前言", ""), _Chunk("a", "x", "第1章 绪论"), _Chunk("b", "y", "第三章 线性模型"),
            _Chunk("c", "z", "第三章 线性模型 > 3.2 线性回归")]
    assert _ids(section_chunks(book, SectionName(number="3"))) == ["b", "c"]
    assert _ids(section_chunks(book, SectionName(title="线性模型"))) == ["b", "c"]
    assert _ids(section_chunks(UNNUMBERED, SectionName(title="related work"))) == ["b"]
    assert section_chunks(UNNUMBERED, SectionName(title="hardware budget")) == []


def test_a_question_about_the_whole_document_may_name_its_subject_but_no_topic() -> None:
    subject = "h2oGPT: Democratizing Large Language Models techreport h2ogpt.pdf"
    assert asks_about_whole_document("What problem does this paper address, and how?")
    assert asks_about_whole_document("请概述这个项目的目标与意义")
    assert asks_about_whole_document("Summarise the goal of h2oGPT.", subject)
    assert not asks_about_whole_document("Summarise the goal of h2oGPT.")
    assert not asks_about_whole_document("Summarise the results of operations for the quarter.", subject)
    assert not asks_about_whole_document("Summarise section 3")


def _run(question: str, chunks: list[_Chunk], retrieved: list[str]) -> tuple[list[str], SearchQuery]:
    def node(chunk: _Chunk, score: float) -> NodeWithScore:
        return NodeWithScore(node=TextNode(id_=chunk.chunk_id, text=chunk.text, metadata={"doc_id": "d"}), score=score)

    by_id = {c.chunk_id: c for c in chunks}
    processor = BroadQuestionPostprocessor(lambda doc_id: chunks if doc_id == "d" else [], node)
    query = SearchQuery(query_str=question, trace=QueryTrace(query=question))
    nodes = processor.postprocess_nodes([node(by_id[i], 1.0) for i in retrieved], query)
    return [n.node.node_id for n in nodes], query


def test_the_postprocessor_gives_each_kind_of_broad_question_its_passages() -> None:
    retrieved = ["f", "b"]
    assert _run("What problem does this paper address, and how?", UNNUMBERED, retrieved)[0] == ["t", "x", "a", "b", "f"]
    assert _run("Summarise section 3", UNNUMBERED, retrieved)[0] == ["c", "d", "e", "f", "b"]
    assert _run("Summarise how the results compare across datasets", UNNUMBERED, retrieved)[0] == retrieved
    assert _run("When was it released?", UNNUMBERED, retrieved)[0] == retrieved


def test_a_section_the_document_lacks_keeps_retrievals_passages_and_says_why() -> None:
    ids, query = _run("Summarise section 9", UNNUMBERED, ["f", "b"])
    assert ids == ["f", "b"]
    assert any("no heading" in stage.fallback_reason for stage in query.trace.stages)


def test_a_comparison_names_its_two_things_in_either_script() -> None:
    assert compared_terms("How do RAPT and NC-RAPT differ?") == ["RAPT", "NC-RAPT"]
    assert compared_terms("How does the method differ from prior work?") == ["method", "prior work"]
    assert compared_terms("What is the difference between BM25 and dense retrieval?") == ["BM25", "dense retrieval"]
    assert compared_terms("梯度下降法與牛頓法有何不同？") == ["梯度下降法", "牛顿法"]
    assert compared_terms("Compare SELF-RAG with standard RAG.") == ["SELF-RAG", "standard RAG"]
    # "compare with last year" names one thing: not a comparison of two (a blind set's question, read afterwards)
    assert compared_terms("How did revenue compare with the quarter a year earlier, and what drove it?") == []
    assert compared_terms("这两种方法有什么区别？") == [] and compared_terms("Summarise section 3") == []


def test_a_compared_thing_stays_in_its_sentence_and_keeps_its_own_letters() -> None:
    # each case from a blind set's question, read after its report
    first, second = compared_terms("Does it answer from what it already knows? Please summarize parametric versus "
                                   "retrieved knowledge.")
    assert (first, second) == ("parametric", "retrieved knowledge")
    # "versus" marks its things by the words around it: the phrase next to it, not the sentence up to it
    assert compared_terms("Please summarize the appendix analysis of parametric versus retrieved knowledge") == [
        "parametric", "retrieved knowledge"]
    assert compared_terms("BM25 vs dense retrieval on SciFact?") == ["BM25", "dense retrieval"]
    assert compared_terms("How does fine-tuning vs. prompting compare in cost?") == ["fine-tuning", "prompting"]
    assert compared_terms("How do another method and theory differ?") == ["another method", "theory"]
    assert compared_terms("超参数和模型参数有啥区别，验证集又是干嘛用的？") == ["超参数", "模型参数"]
    # a thing compared with others it does not name is not a comparison of two
    assert compared_terms("Which prior systems do they compare it with and what do they do differently?") == []


def test_a_comparison_gets_the_passages_where_the_document_first_names_each_thing() -> None:
    paper = [_Chunk("t", "Paraphrase generation with prompts", ""),
             _Chunk("a", "We propose RAPT, retrieval augmented prompt tuning.", "Introduction"),
             _Chunk("c", "Contents\n1 RAPT . . . . . . 3\n2 NC-RAPT . . . . . . 5\n3 Results . . . . . . 7",
                    "Contents"),
             _Chunk("b", "NC-RAPT adds novelty control tokens to RAPT.", "Method"),
             _Chunk("r", "RAPT and NC-RAPT use prefixes of length 8.", "Results")]
    assert _ids(first_mentions(paper, ["NC-RAPT", "RAPT"])) == ["c", "a"]
    ids, _ = _run("How do RAPT and NC-RAPT differ?", paper, ["r"])
    assert ids == ["a", "b", "r"]  # the contents line names both, but defines neither


def test_a_book_that_names_a_method_in_passing_is_compared_where_a_heading_names_it() -> None:
    book = [_Chunk("p", "前言", ""), _Chunk("a", "AdaBoost 与 GBDT 都是提升方法。", "第8章 集成学习 > 8.2 AdaBoost"),
            _Chunk("g", "GBDT 用负梯度拟合残差。", "第8章 集成学习 > 8.5 GBDT"),
            _Chunk("x", "XGBoost 在目标函数中加入正则项。", "第8章 集成学习 > 8.6 XGBoost"),
            _Chunk("m", "We tune prompts with RAPT.", "Method"), _Chunk("r", "It adds novelty control.", "NC-RAPT")]
    assert _ids(first_mentions(book, ["GBDT", "XGBoost"])) == ["g", "x"]
    # a heading must name the term as a whole word: "NC-RAPT" does not name RAPT
    assert _ids(first_mentions(book, ["RAPT", "NC-RAPT"])) == ["m", "r"]
    assert _ids(first_mentions(book, ["AdaBoost", "随机森林"])) == ["a"]


def test_a_named_sections_passages_retrieval_found_come_right_after_its_opening() -> None:
    # "第四节里的“概述”": the budget keeps a long section's first passages, so the part the question names leads
    assert _run("Summarise section 3", UNNUMBERED, ["f", "e"])[0] == ["c", "e", "d", "f"]
    assert _run("Summarise section 3", NUMBERED, ["d", "a"])[0] == ["b", "d", "c", "e", "a"]


def _report(doc_id: str, company: str, file_name: str, topics: list[str]) -> list:
    from rag.documents import Chunk

    texts = [f"{company}股份有限公司2019 年年度报告全文"] + [f"{company}{topic}。本公司2019年经营情况良好。" for topic in topics]
    return [Chunk(f"{doc_id}:{i}", doc_id, file_name, text, i, i + 1, i + 1, 0, len(text), language="zh",
                  heading_path="第四节 经营情况讨论与分析" if i else "") for i, text in enumerate(texts)]


def test_a_broad_question_is_read_from_the_document_it_names_not_the_top_passages(tmp_path) -> None:
    from rag.index.keywords import KeywordIndex
    from rag.retrieval.retrievers import chunk_node

    huajin = _report("h", "北方华锦化学工业", "annual-report-2019_000059_huajin.pdf", ["化肥产销", "炼油", "华锦概述"])
    jianxin = _report("j", "河北建新化工", "annual-report-2019_300107_jianxin.pdf", ["概述", "建新产能", "建新研发"])
    keywords = KeywordIndex(tmp_path / "bm25")
    keywords.add_many({"h": huajin, "j": jianxin})
    processor = BroadQuestionPostprocessor(keywords.chunks_of, chunk_node, holder=keywords.main_holder)

    def first_document(question: str, retrieved: list) -> str:
        query = SearchQuery(query_str=question, trace=QueryTrace(query=question))
        return processor.postprocess_nodes([chunk_node(c, 1.0) for c in retrieved], query)[0].node.metadata["doc_id"]

    retrieved = [jianxin[1], huajin[3], jianxin[2]]  # the other company's report ranks first
    # 华锦 names its report (its title holds it, and so does most text that says it); 2019 and 股份 name neither
    assert first_document("华锦股份年报第四节里的概述是怎么回顾2019年的经营工作的？", retrieved) == "h"
    assert first_document("請總結華錦股份2019年年報第四節的經營情況", retrieved) == "h"
    # a question that names no document, or the top one, keeps retrieval's order
    assert first_document("请概述这份年报第四节的内容", retrieved) == "j"
    assert first_document("请概述建新股份2019年年报第四节的经营情况", retrieved) == "j"
    # with one document selected there is nothing to choose
    assert first_document("华锦股份年报第四节里的概述是怎么回顾2019年的经营工作的？", jianxin[1:]) == "j"

"""Settings of how passages are found: retrieval and fusion, rerank, MMR, query enhancement, reflection."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from rag.config.indexing import PATH_MAX
from rag.config.schema import Section, config_section, require

FusionMode = Literal["rrf", "weighted"]
RetrievalSources = Literal["hybrid", "vector", "keyword"]
ReflectionStrategy = Literal["expand", "rewrite", "both"]

MAX_CANDIDATES = 500  # the ceiling of candidate_k and rerank.candidates; reflection's expansion stops here


@config_section("retrieval")
class RetrievalConfig(Section):
    # every default below was chosen on tuning splits only (SciFact train, the tune halves of SQuAD and
    # CMRC2018) by rag.lab.choose_defaults' rule: never below the better single retriever on any set, then
    # the best mean, ties (within 0.002) to fewer candidates; docs/retrieval-protocol.md has the figures
    top_k: int = Field(5, ge=1, le=100, description="Passages handed to the answer.")
    candidate_k: int = Field(30, ge=1, le=MAX_CANDIDATES,
                             description="Candidates each retriever returns before fusion; must be >= top_k.")
    similarity_threshold: float = Field(0.0, ge=0.0, le=1.0,
                                        description="Drop passages whose relevance is below this (0 keeps all).")
    sources: RetrievalSources = Field("hybrid", description="Which retrievers run: hybrid (vector and keyword "
                                                            "search, fused), vector alone, or keyword (BM25) alone.")
    # min-max weighted fusion beat RRF (k 10 or 60) at every weight, on every set
    fusion: FusionMode = Field("weighted", description="weighted: min-max normalised scores, weighted; rrf: "
                                                       "reciprocal rank fusion.")
    rrf_k: int = Field(60, ge=1, le=1000, description="RRF fusion only: each list adds 1/(k + rank).")
    # Three lists for English questions (BM25, the English embedder, the second English embedder): weights
    # 0.5 / 0.25 / 0.25 at 30 candidates, chosen on SciFact train and checked on the SQuAD tune half; Chinese
    # questions (and English ones without a second embedder) fuse BM25 and one dense list at the same two
    # weights, 2:1, which the CMRC2018 tune half ranks as well as today's 3:2. Per query, when the top
    # keyword hit holds under half of the question's IDF-weighted terms, 0.1 of the (summed-to-1) weight moves
    # from keywords to the dense lists (rag.retrieval.adaptive). docs/retrieval-protocol.md has the figures.
    vector_weight: float = Field(0.25, ge=0.0, le=1.0,
                                 description="Weighted fusion only: weight of the vector scores of the question's "
                                             "language's embedder.")
    second_vector_weight: float = Field(0.25, ge=0.0, le=1.0,
                                        description="Weighted fusion only: weight of the second English embedder's "
                                                    "vector scores (English questions, embedding.second_english_model).")
    keyword_weight: float = Field(0.5, ge=0.0, le=1.0,
                                  description="Weighted fusion only: weight of keyword (BM25) scores.")
    phrase_weight: float = Field(0.5, ge=0.0, le=2.0,
                                 description="BM25 over adjacent word pairs, added to plain BM25 (0 turns it off).")
    # chosen on the tune half of the table questions (docs/documents.md "Tables"); only table chunks move
    table_row_boost: float = Field(0.8, ge=0.0, le=1.0,
                                   description="Added to a table passage's fused score when the question names one "
                                               "of its rows word for word (0 turns it off).")
    # a priori "just below the passage that names the table"; measured on the development table sets
    # (docs/documents.md "Tables a passage names"), not tuned
    table_reference_share: float = Field(0.95, ge=0.0, le=1.0,
                                         description="A table whose caption label ('Table 2', '表2') one of the "
                                                     "first five passages names, within two pages of it, rises "
                                                     "to this share of that passage's fused score (0 turns it "
                                                     "off).")
    # chosen among 0.1 / 0.2 / 0.35 / 0.5 on the 23 development table sets (docs/documents.md `mention50`); only
    # table chunks move, and only for a question that names a table
    table_mention_share: float = Field(0.5, ge=0.0, le=1.0,
                                       description="When the question names a table ('the table of …', '表2', "
                                                   "'对照表中'), every table passage gains this share of the best "
                                                   "fused score (0 turns it off).")
    # off: on the development table sets a fold of 800 tokens (a priori, chunking.parent_chunk_size) raised hit@3 but
    # brought the asked row to the answering model less often within its budget (docs/documents.md `fold55`)
    table_fold_tokens: int = Field(0, ge=0, le=20_000,
                                   description="Parts of one split table found next to each other fold into the "
                                               "best-ranked one, up to this many tokens, so the table answers as "
                                               "one passage (0 turns it off). More tables reach the top results; "
                                               "within a small answer budget fewer of their rows do.")
    # a priori "half": below a passage about the same words, above a weaker one; measured on the development table
    # sets (docs/documents.md `contents20`), not tuned
    contents_share: float = Field(0.5, ge=0.0, le=1.0,
                                  description="A passage that reads as a table of contents (entries led to page "
                                              "numbers by dot leaders) keeps this share of its fused score, unless "
                                              "the question asks about contents or pages (1 turns it off).")
    short_query_tokens: int = Field(2, ge=0, le=20,
                                    description="Queries of at most this many tokens search by keywords only "
                                                "(0 never).")

    @model_validator(mode="after")
    def _cross_field(self) -> RetrievalConfig:
        require(self.candidate_k >= self.top_k, "retrieval.candidate_k", "must be >= top_k")
        require(self.vector_weight + self.second_vector_weight + self.keyword_weight > 0, "retrieval.vector_weight",
                "vector_weight + second_vector_weight + keyword_weight must be > 0")
        return self


@config_section("rerank")
class RerankConfig(Section):
    """Cross-encoder reranking of the first ``candidates`` fused hits.

    ``blend`` weighs the reranker against the retrieval score (both min-max normalised over the
    candidates; 1.0 = reranker alone). ``languages`` lists the query languages the model reads
    (comma-separated, or ``all``): an English-only model scores Chinese text as unknown tokens, so
    such queries skip the stage, recorded in the trace.
    """

    # no cross-encoder ships in any PyPI package; see README
    enabled: bool = Field(False, description="Rerank the fused candidates with a local cross-encoder "
                                             "(none is bundled).")
    model_path: str = Field("", max_length=PATH_MAX,
                            description="A sentence-transformers cross-encoder folder on disk; required when "
                                        "rerank is enabled.")
    top_n: int = Field(5, ge=1, le=100, description="Passages kept after reranking.")
    candidates: int = Field(20, ge=1, le=MAX_CANDIDATES, description="Passages scored; must be >= top_n.")
    blend: float = Field(1.0, ge=0.0, le=1.0, description="1 = the cross-encoder's score alone; lower mixes in the "
                                                          "retrieval score.")
    languages: str = Field("all", max_length=100,
                           description="Query languages the cross-encoder reads: all, en, or en,zh; other "
                                       "queries skip rerank.")

    @model_validator(mode="after")
    def _cross_field(self) -> RerankConfig:
        require(self.candidates >= self.top_n, "rerank.candidates", "must be >= top_n")
        require(bool(self.languages.strip()), "rerank.languages", "must be 'all' or a list such as 'en' or 'en,zh'")
        require(not self.enabled or bool(self.model_path), "rerank.model_path",
                "is required when rerank is enabled (a local cross-encoder folder)")
        return self


@config_section("mmr")
class MMRConfig(Section):
    enabled: bool = Field(False, description="Maximal marginal relevance: prefer passages unlike those already "
                                             "chosen.")
    lambda_mult: float = Field(0.7, ge=0.0, le=1.0, description="MMR only: 1 = relevance only, 0 = diversity only.")


@config_section("query")
class QueryConfig(Section):
    rewrite: bool = Field(False, description="The LLM writes search variants of the question.")
    variants: int = Field(3, ge=1, le=8, description="Search variants the LLM writes when rewrite is on.")
    hyde: bool = Field(False, description="HyDE: also search with an LLM-written hypothetical answer.")
    timeout_s: float = Field(20.0, ge=0.1, le=600.0,
                             description="Seconds to wait for rewrite or HyDE before searching without them.")


@config_section("reflection")
class ReflectionConfig(Section):
    enabled: bool = Field(False, description="The LLM grades the sources and retrieves again when they fall short.")
    min_score: int = Field(7, ge=1, le=10, description="Grade (1-10) the sources must reach.")
    max_rounds: int = Field(3, ge=1, le=10, description="Grading rounds at most, the first retrieval included.")
    strategy: ReflectionStrategy = Field("both", description="After a low grade: expand (more passages), rewrite "
                                                             "(a new query) or both.")

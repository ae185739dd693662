"""Deterministic question splits, so retrieval defaults are chosen on one half and reported on the other.

The protocol (docs/retrieval-protocol.md): every parameter is chosen on a tuning split and every
reported figure comes from a split nothing was chosen on.

- BEIR sets ship their own splits as qrels files (SciFact: ``train`` 809 claims, ``test`` 300).
- SQuAD-style sets (SQuAD v1.1 dev, CMRC2018 dev) are split **by article**: articles are sorted by
  title (then by their position in the file, for repeated titles) and alternate, the first going to
  ``tune`` and the second to ``report``. Splitting by article keeps the questions of one Wikipedia
  article, which share its wording, on one side. Only the *questions* are split: the corpus stays
  every paragraph of the file, so both halves search the same collection and are equally hard.

``cmrc2018-tw`` is CMRC2018 converted to traditional Chinese (OpenCC ``s2twp``: Taiwan standard
characters and Taiwan phrases) after splitting, so each half holds the same questions in both scripts.
"""

from __future__ import annotations

from dataclasses import replace

from rag.evaluation.sets import EvalDataset
from rag.text.script import to_traditional

HALVES = ("tune", "report")


def article_of(doc_id: str) -> str:
    """The article index of a SQuAD-style document id (``"<article>-<paragraph>"``)."""
    return doc_id.rsplit("-", 1)[0]


def article_halves(dataset: EvalDataset) -> dict[str, str]:
    """article index -> ``"tune"`` or ``"report"``: titles sorted, alternating, the first to ``tune``."""
    titles: dict[str, str] = {}
    for doc_id, entry in dataset.corpus.items():
        titles.setdefault(article_of(doc_id), entry.get("title", ""))
    order = sorted(titles, key=lambda article: (titles[article], _position(article)))
    return {article: HALVES[i % 2] for i, article in enumerate(order)}


def _position(article: str) -> tuple[int, str]:
    return (int(article), "") if article.isdigit() else (0, article)


def select_split(dataset: EvalDataset, split: str) -> EvalDataset:
    """The questions of one split of a SQuAD-style set (``tune``, ``report`` or ``all``).

    Raises:
        ValueError: An unknown split, or ``tune`` / ``report`` asked of a set with its own splits
            (BEIR) or with no articles (a CSV set).
    """
    if split == "all":
        return dataset
    if split not in HALVES:
        raise ValueError(f"unknown split {split!r}: use tune, report or all (BEIR sets: a qrels name such as "
                         "train or test)")
    if dataset.split or not dataset.corpus or not all("-" in d for d in dataset.corpus):
        raise ValueError(f"{dataset.name}: tune / report halves are for SQuAD-style sets; "
                         + ("this BEIR set has its own splits (train, test)" if dataset.split
                            else "this set has no articles to split by"))
    halves = article_halves(dataset)
    keep = [q for q, judged in dataset.qrels.items()
            if q in dataset.queries and any(halves.get(article_of(d)) == split for d in judged)]
    return replace(dataset, queries={q: dataset.queries[q] for q in keep}, qrels={q: dataset.qrels[q] for q in keep},
                   split=split)


def to_traditional_set(dataset: EvalDataset, conversion: str = "s2twp") -> EvalDataset:
    """``dataset`` with its passages, titles and questions converted to traditional Chinese by OpenCC.

    Args:
        dataset: A set in simplified Chinese.
        conversion: The OpenCC configuration. Defaults to ``s2twp`` (Taiwan, with Taiwan phrases).
    """
    corpus = {doc_id: {key: to_traditional(value, conversion) for key, value in entry.items()}
              for doc_id, entry in dataset.corpus.items()}
    queries = {qid: to_traditional(text, conversion) for qid, text in dataset.queries.items()}
    return replace(dataset, corpus=corpus, queries=queries)

"""Query-adaptive fusion weights: lean on the dense side when the keyword evidence is weak.

Fixed weights that favour BM25 suit questions that reuse the passage's words (SQuAD, CMRC2018) and
fail questions phrased unlike the text: on the SQuAD and SciFact tuning splits, the questions whose
gold passage holds under 40% of their IDF-weighted terms ranked better by the dense retriever alone
than fused with BM25 leading (docs/retrieval-protocol.md). Whether the gold passage holds the terms is
unknown at query time, but the best keyword hit is a good witness: when even BM25's top hit holds
little of the question's (IDF-weighted) terms, the lexical match is weak, so the dense list gets
``DENSE_SHIFT`` more weight for that query.

Chosen on tuning splits by ``rag.lab.choose_defaults`` (``rag.lab.tune_fusion --adaptive-grid``):
coverage below 0.5 shifts 0.1 of the weight to the dense side (0.4 -> 0.5 with the two-way weights of
that choice), split between two dense lists in proportion to their weights.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from rag.text.tokenizer import tokenize

COVERAGE_BELOW = 0.5
DENSE_SHIFT = 0.1

Idf = Callable[[Iterable[str]], Mapping[str, float]]


def lexical_coverage(query: str, text: str, idf: Idf | None = None,
                     tokenizer: Callable[[str], list[str]] = tokenize) -> float | None:
    """IDF-weighted share of the query's distinct search terms that ``text`` holds, or None without terms.

    Args:
        query: The question.
        text: The passage (the top keyword hit's text).
        idf: token -> weight for the query's tokens (``KeywordIndex.idf``). Defaults to equal weights.
        tokenizer: The BM25 tokenizer, so terms match as BM25 matched them.
    """
    terms = sorted(set(tokenizer(query)))  # sorted: a float sum in set order changes with the string-hash seed
    if not terms:
        return None
    weights = dict(idf(terms)) if idf else {term: 1.0 for term in terms}
    held = set(tokenizer(text))
    whole = sum(weights.get(term, 0.0) for term in terms)
    return sum(weights.get(term, 0.0) for term in terms if term in held) / whole if whole > 0 else None


def adapt_weights(weights: Mapping[str, float], coverage: float | None, *, dense_sources: Sequence[str],
                  keyword_source: str, below: float = COVERAGE_BELOW, shift: float = DENSE_SHIFT,
                  ) -> tuple[dict[str, float], str]:
    """``weights``, summed to 1, with ``shift`` moved from the keyword to the dense sources when ``coverage < below``.

    The shift is split among the dense sources in proportion to their weights (all equally if those
    are 0). Returns the weights and a note for the trace ("" when nothing moved). Weights never go below 0.

    Args:
        weights: Source name -> weight (any scale: min-max fusion ranks only by their ratios).
        coverage: ``lexical_coverage`` of the top keyword hit; None leaves the weights alone.
        dense_sources: The dense sources that returned hits for this query.
        keyword_source: The keyword source's name.
        below: Coverage under which the lexical evidence counts as weak. 0 disables.
        shift: How much of the summed-to-1 weight moves to the dense side.
    """
    total = sum(weights.values())
    adapted = {name: weight / total for name, weight in weights.items()} if total > 0 else dict(weights)
    dense = [name for name in dense_sources if name in adapted]
    if coverage is None or below <= 0 or coverage >= below or not dense or keyword_source not in adapted:
        return adapted, ""
    moved = min(shift, adapted[keyword_source])
    dense_total = sum(adapted[name] for name in dense)
    adapted[keyword_source] -= moved
    for name in dense:
        adapted[name] += moved * (adapted[name] / dense_total if dense_total > 0 else 1 / len(dense))
    return adapted, (f"weak keyword evidence (the top keyword hit holds {coverage:.0%} of the question's "
                     f"weighted terms, under {below:.0%}): {moved:g} of the weight moved to {', '.join(dense)}")

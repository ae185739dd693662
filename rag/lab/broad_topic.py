"""Replay the broad gate (``rag.answer.topic``) on broad-question sets without generating answers, and choose it.

It builds (or reuses) one library of the sets' PDFs, prepares each question's answer as the app does (retrieval,
the broad passages, the context budget) and records the topic share of the sources the model would read and, with
``--with-llm``, the model's P(yes) to the broad check line. It prints each question's share, the AUC of each signal
(answerable above unanswerable questions) and, per weight of P(yes) against the topic share, the threshold with the
most abstention on the unanswerable questions while false abstention on the answerable ones stays within
``--max-false`` (the lowest false abstention of equals). For each answerable question it also says whether a gold page
is among those sources and what share of the question's key terms they hold (``passage_reach``), and prints both over
the sets: whether retrieval, not the answer, is what falls short. Choose on development sets only.

    python -m rag.lab.broad_topic --with-llm --library /tmp/libs broad broad-holdout broad-unanswerable-dev
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from rag.cli.common import add_global_options, configure
from rag.config import RagConfig

logger = logging.getLogger(__name__)

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # of P(yes) against the topic share


def replay_sets(names: list[str], config: RagConfig, library: Path, llm: Any, *,
                with_llm: bool = False) -> list[dict[str, Any]]:
    """One row per question of the named sets: answerable, the topic share and the missing words.

    One library holds every PDF the sets name (kept in ``library``, so a second replay asks at once); the IDF the
    check weighs by is that library's, close to but not the same as a run's library of one set's PDFs.
    """
    from dataclasses import replace

    from rag.answer.engine import CitewiseQueryEngine
    from rag.answer.gate import check_messages, top_similarity, yes_probability
    from rag.answer.llm_runner import LLMRunner
    from rag.answer.topic import topic_share
    from rag.evaluation.answers import BROAD_SETS
    from rag.evaluation.broad_eval import load_questions
    from rag.evaluation.datasets import DEFAULT_DATA_ROOT
    from rag.index.store import DocumentStore
    from rag.ingest.ingestor import Ingestor
    from rag.prompts import BROAD_CHECK_LINE
    from rag.runtime import build_router

    questions = [(name, q) for name in names for q in load_questions(BROAD_SETS[name])]
    config = replace(config, storage=replace(config.storage, data_dir=str(library / "data"))).validate()
    store = DocumentStore(config, build_router(config))
    ingestor = Ingestor(store, config)
    doc_ids = {}
    for file in dict.fromkeys(q["file"] for _, q in questions):
        doc_ids[file] = ingestor.ingest_path(DEFAULT_DATA_ROOT / "pdfs" / file).doc_id
    engine = CitewiseQueryEngine.from_config(config, store, LLMRunner(llm))
    rows = []
    for name, q in questions:
        stream = engine.stream(q["question"], doc_ids=[doc_ids[q["file"]]])  # never iterated: nothing generated
        topic = topic_share(stream.standalone_question, stream.sources, store.keywords.idf)
        p_yes = None
        if with_llm and stream.messages:
            p_yes = yes_probability(llm, check_messages(stream.messages, BROAD_CHECK_LINE))[0]
        rows.append({"set": name, "question": q["question"], "answerable": not q.get("absent"),
                     "share": topic.share, "missing": topic.missing[:6], "p_yes": p_yes,
                     "similarity": top_similarity(stream.retrieval, stream.sources),
                     "pages": [s.page_start for s in stream.sources], "route": _broad_route(stream.retrieval),
                     **passage_reach(q, stream.sources)})
    store.close()
    return rows


def _broad_route(retrieval: Any) -> str:
    """What the broad stage did with the question (its note or fallback), "" when it did not run."""
    stage = retrieval.trace.get("broad") if retrieval is not None else None
    if stage is None:
        return ""
    return "; ".join([*stage.notes, stage.fallback_reason]).strip("; ")


def passage_reach(question: dict[str, Any], sources: Sequence[Any]) -> dict[str, Any]:
    """What of an answerable question's gold the sources hold: a gold page, and the share of its key terms.

    A key term given in several scripts (``[simplified, traditional]``) counts once, found in any of them.
    """
    if question.get("absent") or not question.get("pages"):
        return {}
    gold = set(question["pages"])
    text = " ".join(source.text for source in sources).lower()
    terms = [term if isinstance(term, list) else [term] for term in question.get("key_terms", [])]
    found = sum(any(form.lower() in text for form in forms) for forms in terms)
    return {"gold_page": any(gold & set(range(s.page_start, s.page_end + 1)) for s in sources),
            "terms_found": round(found / len(terms), 3) if terms else None}


def auc(positives: list[float], negatives: list[float]) -> float | None:
    """P(a random answerable question's share > a random unanswerable one's), ties counting half."""
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 3)


def choose_line(rows: list[dict[str, Any]], weights: Sequence[float], max_false: float) -> list[dict[str, Any]]:
    """Per weight ``w`` of P(yes) (``1 - w`` of the topic share, which counts 1.0 when a question has no topic words,
    as the app counts it), the threshold with the most abstention on the unanswerable rows while false abstention on
    the answerable ones is at most ``max_false``, the lowest false abstention of equals. Rows without P(yes) count
    only at ``w = 0``."""
    chosen = []
    for w in weights:
        scored = [(w * (r["p_yes"] or 0.0) + (1 - w) * (1.0 if r["share"] is None else r["share"]), r["answerable"])
                  for r in rows if w == 0 or r.get("p_yes") is not None]
        answerable = [score for score, ok in scored if ok]
        unanswerable = [score for score, ok in scored if not ok]
        if not answerable or not unanswerable:
            continue
        best = None
        for threshold in sorted({round(score + 1e-4, 4) for score, _ in scored}):
            false = sum(score < threshold for score in answerable) / len(answerable)
            caught = sum(score < threshold for score in unanswerable) / len(unanswerable)
            if false <= max_false and (best is None or (caught, -false) > (best["abstention"], -best["false"])):
                best = {"w_yes": w, "threshold": threshold, "abstention": caught, "false": false}
        if best is not None:
            best["auc"] = auc(answerable, unanswerable)
            chosen.append(best)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.broad_topic", description=__doc__.splitlines()[0])
    add_global_options(parser)
    parser.add_argument("sets", nargs="+", help="broad sets (rag.evaluation.answers.BROAD_SETS)")
    parser.add_argument("--library", required=True, type=Path, help="where the library is built and kept")
    parser.add_argument("--with-llm", action="store_true",
                        help="also ask the model whether the sources say anything about the question (P(yes))")
    parser.add_argument("--max-false", type=float, default=0.15,
                        help="the most false abstention on answerable questions a chosen line may have (0.15)")
    parser.add_argument("--out", type=Path, default=None, help="write the rows here (JSON)")
    args = parser.parse_args(argv)
    config = configure(args)
    if config is None:
        return 2
    from rag.config import DEFAULT_HOME
    from rag.models.llms import load_embedded_llm

    llm = load_embedded_llm(config.llm, config.generation, DEFAULT_HOME)  # its tokenizer counts the budget
    rows = replay_sets(args.sets, config, args.library, llm, with_llm=args.with_llm)
    if args.out:
        args.out.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    for row in rows:
        share = "n/a" if row["share"] is None else f"{row['share']:.2f}"
        print(f"{row['set']:<26} {'A' if row['answerable'] else 'U'} {share:>5} missing={row['missing']} "
              f"| {row['question'][:70]}")
    for signal in ("share", "p_yes", "similarity"):
        values = [r for r in rows if r.get(signal) is not None]
        ranked = auc([r[signal] for r in values if r["answerable"]], [r[signal] for r in values if not r["answerable"]])
        print(f"AUC of {signal}: {ranked}")
    reached = [r for r in rows if "gold_page" in r]
    if reached:
        terms = [r["terms_found"] for r in reached if r["terms_found"] is not None]
        print(f"passages: a gold page among the sources for {sum(r['gold_page'] for r in reached)} of {len(reached)} "
              f"answerable questions; key terms in the sources, mean share {sum(terms) / max(len(terms), 1):.3f}")
    lines = choose_line(rows, WEIGHTS if args.with_llm else (0.0,), args.max_false)
    for line in lines:
        print(f"{line['w_yes']:.2f}*P(yes) + {1 - line['w_yes']:.2f}*topic share >= {line['threshold']:.4f}: AUC "
              f"{line['auc']}, abstention {line['abstention']:.3f}, false abstention {line['false']:.3f}")
    if lines:
        best = max(lines, key=lambda line: (line["abstention"], -line["false"]))
        print(f"chosen: {best['w_yes']:.2f}*P(yes) + {1 - best['w_yes']:.2f}*topic share >= {best['threshold']:.4f}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    raise SystemExit(main())

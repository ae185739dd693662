"""Replay the broad topic check (``rag.answer.topic``) on broad-question sets without generating answers.

It builds (or reuses) one library of the sets' PDFs, prepares each question's answer as the app does (retrieval,
the broad passages, the context budget) and records the topic share of the sources the model would read, then
prints each question's share and, over answerable against unanswerable questions, the AUC, the rates at each
threshold and the threshold with the largest abstention minus false abstention (the lowest of equals). Choose the
threshold on development sets only.

    python -m rag.lab.broad_topic --library /tmp/libs broad-holdout broad-holdout2 broad-unanswerable-dev
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from rag.cli.common import add_global_options, configure
from rag.config import RagConfig

logger = logging.getLogger(__name__)


def replay_sets(names: list[str], config: RagConfig, library: Path, llm: Any, *,
                with_llm: bool = False) -> list[dict[str, Any]]:
    """One row per question of the named sets: answerable, the topic share and the missing words.

    One library holds every PDF the sets name (kept in ``library``, so a second replay asks at once); the IDF the
    check weighs by is that library's, close to but not the same as a run's library of one set's PDFs.
    """
    from dataclasses import replace

    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from rag.answer.engine import CitewiseQueryEngine
    from rag.answer.gate import top_similarity, yes_probability
    from rag.prompts import BROAD_CHECK_LINE
    from rag.answer.llm_runner import LLMRunner
    from rag.answer.topic import topic_share
    from rag.evaluation.answers import BROAD_SETS
    from rag.evaluation.broad_eval import load_questions
    from rag.evaluation.datasets import DEFAULT_DATA_ROOT
    from rag.index.store import DocumentStore
    from rag.ingest.ingestor import Ingestor
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
            *head, last = stream.messages
            probe = [*head, ChatMessage(role=MessageRole.USER, content=f"{last.content}\n\n{BROAD_CHECK_LINE}")]
            p_yes = yes_probability(llm, probe)[0]
        rows.append({"set": name, "question": q["question"], "answerable": not q.get("absent"),
                     "share": topic.share, "missing": topic.missing[:6], "p_yes": p_yes,
                     "similarity": top_similarity(stream.retrieval, stream.sources),
                     "pages": [s.page_start for s in stream.sources]})
    store.close()
    return rows


def auc(positives: list[float], negatives: list[float]) -> float | None:
    """P(a random answerable question's share > a random unanswerable one's), ties counting half."""
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return round(wins / (len(positives) * len(negatives)), 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.broad_topic", description=__doc__.splitlines()[0])
    add_global_options(parser)
    parser.add_argument("sets", nargs="+", help="broad sets (rag.evaluation.answers.BROAD_SETS)")
    parser.add_argument("--library", required=True, type=Path, help="where the library is built and kept")
    parser.add_argument("--with-llm", action="store_true",
                        help="also ask the model whether the sources say anything about the question (P(yes))")
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
    for signal in ("p_yes", "similarity"):
        values = [r for r in rows if r.get(signal) is not None]
        print(f"AUC of {signal}: {auc([r[signal] for r in values if r['answerable']], [r[signal] for r in values if not r['answerable']])}")
    known = [r for r in rows if r["share"] is not None]
    answerable = sorted(r["share"] for r in known if r["answerable"])
    unanswerable = sorted(r["share"] for r in known if not r["answerable"])
    print(f"answerable {len(answerable)}, unanswerable {len(unanswerable)}, AUC {auc(answerable, unanswerable)}")
    best: tuple[float, float] | None = None
    for threshold in sorted({round(s + 0.005, 3) for s in answerable + unanswerable} | {0.0}):
        refused = sum(s < threshold for s in answerable) / max(len(answerable), 1)
        caught = sum(s < threshold for s in unanswerable) / max(len(unanswerable), 1)
        print(f"min {threshold:.3f}: abstention on unanswerable {caught:.2f}, false abstention {refused:.2f}")
        if best is None or caught - refused > best[1] + 1e-9:
            best = (threshold, caught - refused)
    if best is not None:
        print(f"chosen: min {best[0]:.3f} (abstention minus false abstention {best[1]:.2f})")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    raise SystemExit(main())

"""``python -m rag.lab bench evidence``: does the gold answer reach the model? Evidence fitting vs whole chunks.

Retrieval only (no generation): builds the ``eval-answers`` library of a set's split, retrieves every
answerable question with each context setting, and counts the questions whose fitted context (what the
model reads) contains a gold answer, with the context's size in the answering model's tokens (the
bundled model's tokenizer, loaded without weights).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from statistics import median

from rag.config import DEFAULT_HOME, RagConfig

SETTINGS = (("whole chunks, 500 tokens", False, 500), ("whole chunks, 180 tokens", False, 180),
            ("evidence, 180 tokens", True, 180), ("evidence, 250 tokens", True, 250))


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench evidence", description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="squad2")
    parser.add_argument("--split", default="tune", choices=["tune", "report"])
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(config, args.dataset, args.split, args.questions)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(f"{report['dataset']} ({report['split']}): {report['questions']} answerable questions; "
              f"load average {report['load']}")
        for row in report["settings"]:
            print(f"  {row['setting']:<26} gold answer in context {row['gold_in_context']:.3f}, passages p50 "
                  f"{row['passages_p50']}, context tokens p50 {row['tokens_p50']}")
    return 0


def run(config: RagConfig, dataset: str, split: str, questions: int) -> dict:
    from dataclasses import replace

    from rag.evaluation.answer_library import build_set_library
    from rag.evaluation.answer_metrics import contains_answer
    from rag.evaluation.unanswerable import load_set

    counter = model_token_counter(config)
    with tempfile.TemporaryDirectory(prefix="citewise-bench-evidence-") as tmp:
        library = build_set_library(load_set(dataset, split), config, n=questions, unanswerable=0, seed=0,
                                    workdir=Path(tmp), distractors=16)
        rows = []
        for name, evidence, budget in SETTINGS:
            settings = replace(config, generation=replace(config.generation, evidence_fitting=evidence,
                                                          max_context_tokens=budget)).validate()
            engine = answer_context_engine(settings, library.store, counter)
            hits, sizes, counts = 0, [], []
            for item in library.chosen:
                nodes = engine.search(item.question).nodes
                text = "\n".join(n.node.get_content() for n in nodes)
                hits += contains_answer(text, item.answers, dataset == "cjrc")
                sizes.append(counter(text))
                counts.append(len(nodes))
            rows.append({"setting": name, "gold_in_context": round(hits / max(len(library.chosen), 1), 4),
                         "passages_p50": median(counts) if counts else None,
                         "tokens_p50": median(sizes) if sizes else None})
        library.store.close()
    return {"dataset": dataset, "split": split, "questions": len(library.chosen), "settings": rows,
            "load": round(os.getloadavg()[0], 2)}


def answer_context_engine(config: RagConfig, store: object, counter: object) -> object:
    """A retrieval-only engine whose sources are what the answering model would read: the context budget counted
    with ``counter`` (``model_token_counter``), evidence fitting as ``config`` says."""
    from rag.answer.engine import CitewiseQueryEngine
    from rag.retrieval.assembly import build_retrieval

    return CitewiseQueryEngine(config, build_retrieval(config, store, count_tokens=counter), store, None)


def model_token_counter(config: RagConfig):
    """The bundled model's tokenizer (vocabulary only, no weights loaded)."""
    import llama_cpp

    from rag.models.assets import ensure_gguf

    path = ensure_gguf(config.llm.embedded_model, DEFAULT_HOME)
    vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    return lambda text: len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))

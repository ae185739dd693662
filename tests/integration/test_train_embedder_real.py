"""The bi-encoder trainer end to end on a tiny BEIR folder, with the real bundled MiniLM weights,
and ``bundled:minilm-scifact`` loading what it wrote (or standing in for it when it is missing)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rag.models.embedders import SCIFACT_MINILM_FOLDER, build_embedder
from rag.lab.train_embedder import contrastive_loss, main

FACTS = [("Aspirin", "Aspirin lowers the risk of a second stroke."),
         ("Statins", "Statins lower LDL cholesterol in adults."),
         ("Sleep", "Sleep after learning improves memory consolidation."),
         ("Exercise", "Aerobic exercise lowers resting blood pressure."),
         ("Coffee", "Coffee intake is not linked to heart arrhythmia."),
         ("Vitamin D", "Vitamin D supplements do not prevent fractures in older adults.")]
CLAIMS = ["aspirin prevents recurrent stroke", "statins reduce cholesterol", "sleep helps memory",
          "exercise reduces blood pressure", "coffee causes arrhythmia", "vitamin D prevents fractures"]


def _beir_folder(root: Path) -> Path:
    folder = root / "tiny-beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": t, "text": x}) + "\n"
                                                 for i, (t, x) in enumerate(FACTS)))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": c}) + "\n"
                                                  for i, c in enumerate(CLAIMS)))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                                + "".join(f"q{i}\td{i}\t1\n" for i in range(len(CLAIMS))))
    return folder


def test_trainer_writes_a_model_that_bundled_minilm_scifact_loads(tmp_path: Path, capsys) -> None:
    models = tmp_path / "models"
    out = models / SCIFACT_MINILM_FOLDER
    assert main(["--dataset", str(_beir_folder(tmp_path)), "--out", str(out), "--epochs", "2", "--batch-size", "3",
                 "--max-length", "32", "--holdout", "0", "--lr", "5e-5"]) == 0
    record = json.loads((out / "training.json").read_text())
    assert record["train_queries"] == 6 and record["groups"] == 6 and record["steps"] == 4

    tuned = build_embedder("bundled:minilm-scifact", models_dir=models)
    stock = build_embedder("bundled:minilm")
    assert tuned.model_id.startswith("minilm-l6-v2-scifact-") and not tuned.fallback_reason

    def pair_loss(embedder) -> float:  # how well each claim picks its own fact among the six
        claims = torch.tensor(embedder.get_text_embedding_batch(CLAIMS))
        facts = torch.tensor(embedder.get_text_embedding_batch([f"{t}\n{x}" for t, x in FACTS]))
        return contrastive_loss(claims, facts, scale=20.0).item()

    assert pair_loss(tuned) < pair_loss(stock)  # it learned the six pairs


def test_a_missing_tuned_model_falls_back_to_the_bundled_one_and_says_why(tmp_path: Path) -> None:
    embedder = build_embedder("bundled:minilm-scifact", models_dir=tmp_path)
    assert embedder.model_id == "minilm-l6-v2"
    assert "not available" in embedder.fallback_reason and "rag.lab.train_embedder" in embedder.fallback_reason
    assert "shared" not in embedder.fallback_reason  # a user-facing message never points at our evaluation data

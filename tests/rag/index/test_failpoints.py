"""Failpoints kill the process exactly where a crash test armed them (in a child process)."""

from __future__ import annotations

import pytest

from rag.config import RagConfig
from tests.children import run_child

POINTS = ["a", "b", "c", "b", "d"]


@pytest.mark.parametrize(("spec", "dies_at"), [("3", 2), ("b:2", 3), ("b+1", 2), ("b+0", 1), ("", None)],
                         ids=["third-point", "second-b", "one-after-b", "at-b", "disarmed"])
def test_the_process_dies_at_the_armed_point(config: RagConfig, spec: str, dies_at: int | None) -> None:
    done = run_child(config, f"""
        from rag.index import failpoints
        failpoints.arm({spec!r})
        for number, name in enumerate({POINTS!r}):
            print(number, flush=True)
            failpoints.reached(name)
        print("survived", flush=True)
    """, open_store=False)
    last = done.stdout.split()[-1]
    if dies_at is None:
        assert done.returncode == 0 and last == "survived"
    else:
        assert done.returncode == -9 and last == str(dies_at)

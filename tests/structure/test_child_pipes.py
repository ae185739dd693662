"""Watching a child's output works however many descriptors the test process holds.

A full suite run holds over a thousand open descriptors by the time the late integration tests start (model files,
stores, sockets), and ``select.select`` refuses any descriptor past 1024: the kill soak failed on that in CI, not on
anything it tests. Its watchers use a selector (epoll or poll) instead.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from tests.children import wait_for_line


def test_a_childs_line_is_read_when_its_pipe_is_past_descriptor_1024() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard open-file limit ({hard}) cannot hold 1,200 descriptors")
    if soft != resource.RLIM_INFINITY and soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        child = subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)"], stdout=subprocess.PIPE,
                                 text=True)
        assert child.stdout is not None and child.stdout.fileno() > 1024
        assert wait_for_line(child, "ready", timeout=30).strip() == "ready"
        child.wait(timeout=30)
        child.stdout.close()
    finally:
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

"""What every command line shares: the global options, the config they build, and the lab hand-off.

``python -m rag`` (the app's commands) and ``python -m rag.lab`` (benchmarks and calibration) take the
same ``--config``, ``--set`` and ``-v``. The lab is a separate program so that nothing the app runs
imports it; ``python -m rag bench ...`` and ``python -m rag calibrate-gate ...`` start it in a child
process with the same arguments.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
from typing import Sequence

from rag.config import ConfigError, RagConfig, load_config

LAB_COMMANDS = ("bench", "calibrate-gate")


def add_global_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="YAML config file (default: $RAG_CONFIG)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="override a config field for this call, e.g. retrieval.top_k=8")
    parser.add_argument("-v", "--verbose", action="store_true")


def configure(args: argparse.Namespace) -> RagConfig | None:
    """Set up logging and build the config from ``--config`` and ``--set``; None (message printed) on error."""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(args.config)
        if args.set:
            config = config.with_overrides(dict(split_assignment(item) for item in args.set))
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return None
    return config


def split_assignment(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep:
        raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def command_of(argv: Sequence[str]) -> str | None:
    """The sub-command in ``argv``: the first word that is not a global option or its value."""
    takes_value = {"--config", "--set"}
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in takes_value:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def forward_to_lab(argv: Sequence[str]) -> int:
    """Run ``python -m rag.lab`` with the same arguments in a child process; its exit code."""
    return subprocess.call([sys.executable, "-m", "rag.lab", *argv])

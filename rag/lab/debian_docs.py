"""``python -m rag.lab.debian_docs``: fetch the PDFs of the held-out table sets from holdout6 on, from Debian packages.

The shared PDFs had no unused table page left, so ``table_questions_holdout6.json`` and every later held-out set
were written on documents nobody here had looked at: R packages' papers and vignettes (booktabs tables of estimates,
R's printed output), TeX Live's manuals, templates and samples, and, while any were left, the Chinese LaTeX manuals,
thesis templates and Debian references of ``texlive-lang-chinese`` and other packages. They are not copied into the
repository; this downloads the pinned packages with ``apt-get download`` (the Debian registry is reachable where PyPI
is), unpacks them with ``dpkg-deb`` and keeps the PDFs listed in ``data/debian_docs.tsv`` (each set's PDFs with their
package, exact version and path inside it), each checked against its SHA-256 so that every run reads the bytes the
questions were written on.
Lab only: the app never downloads anything.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from rag.config import DEFAULT_HOME

log = logging.getLogger(__name__)

DEBIAN_DOCS_DIR = DEFAULT_HOME / "lab" / "debian-docs"


class DebianDoc(NamedTuple):
    name: str
    package: str
    version: str
    path: str  # inside the package
    sha256: str


PINS = Path(__file__).with_name("data") / "debian_docs.tsv"


def _read_pins(path: Path = PINS) -> tuple[DebianDoc, ...]:
    """The pinned PDFs, one tab-separated line each after the held-out set that uses it (``#`` lines are comments)."""
    lines = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    return tuple(DebianDoc(*fields[1:]) for fields in lines)


DOCS = _read_pins()


def missing(dest: Path = DEBIAN_DOCS_DIR) -> list[str]:
    """Names of the listed PDFs not yet in ``dest`` with the pinned bytes."""
    return [doc.name for doc in DOCS if not _verified(dest / doc.name, doc.sha256)]


def fetch(dest: Path = DEBIAN_DOCS_DIR) -> list[str]:
    """Download and unpack each package still needed; returns the names of the PDFs written."""
    needed = [doc for doc in DOCS if not _verified(dest / doc.name, doc.sha256)]
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="citewise-debian-") as tmp:
        for package, version in sorted({(doc.package, doc.version) for doc in needed}):
            unpacked = _unpack(package, version, Path(tmp))
            for doc in (d for d in needed if d.package == package):
                source = unpacked / doc.path
                if not _verified(source, doc.sha256):
                    raise RuntimeError(f"{package} {version}: {doc.path} is missing or differs from the pinned SHA-256")
                shutil.copyfile(source, dest / doc.name)
                written.append(doc.name)
    return written


def _unpack(package: str, version: str, tmp: Path) -> Path:
    download = tmp / package
    download.mkdir()
    # An exact version, so a newer upload cannot silently change the documents the questions were written on.
    subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=download, check=True,
                   capture_output=True, text=True)
    deb = next(download.glob("*.deb"))
    target = tmp / f"{package}-files"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True, capture_output=True, text=True)
    return target


def _verified(path: Path, sha256: str) -> bool:
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.lab.debian_docs", description=__doc__.split("\n")[0])
    parser.add_argument("--dest", type=Path, default=DEBIAN_DOCS_DIR)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        written = fetch(args.dest)
    except (subprocess.CalledProcessError, FileNotFoundError, RuntimeError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        log.error("could not fetch the Debian documents: %s", detail.strip())
        return 1
    log.info("%d PDFs written, %d already there, in %s", len(written), len(DOCS) - len(written), args.dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())

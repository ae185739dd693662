"""``python -m rag.lab.debian_docs``: fetch the PDFs of the 6th to 26th held-out table sets from Debian packages.

The shared PDFs had no unused table page left, so ``table_questions_holdout6.json`` was written on
documents nobody here had looked at: R packages' papers and vignettes (English, booktabs tables of
estimates) and the Chinese LaTeX manuals and report templates of ``texlive-lang-chinese``;
``table_questions_holdout7.json`` on thirteen more (coin's and quantreg's papers, the fontspec, xcolor and
polyglossia manuals, and ctex's and other Chinese package manuals), ``table_questions_holdout8.json`` on twelve
more (siunitx and other texlive-science manuals, multcomp's vignettes, Debian's Chinese reference, maintainer and
Debian Edu manuals, the Chinese Asymptote manual), ``table_questions_holdout9.json`` on twelve more (R vignettes of
ordinal, xtable, psych and glmmTMB, the microtype and mdwtab manuals, Debian's traditional-Chinese reference, Chinese
TeX books and thesis templates), ``table_questions_holdout10.json`` on twelve more (texlive-science manuals,
unicode-math, systemfit's and quantreg's rq vignettes, six Chinese thesis templates),
``table_questions_holdout11.json`` on twelve more (texlive-latex-extra and publishers' guides, fitdistrplus' paper, the
traditional-Chinese maintainer guide, Chinese thesis and report templates), ``table_questions_holdout12.json`` on
twelve more (texlive-latex-extra and publishers' manuals, forecast's JSS paper, Chinese thesis and exam templates),
``table_questions_holdout13.json`` on twelve more (R vignettes of effects and flexmix, texlive-latex-extra manuals,
Chinese bibliography-style and thesis manuals), ``table_questions_holdout14.json`` on ten more (zoo's FAQ,
caption, fancyref and booktabs manuals, the ASME template, Chinese chess, beamer and thesis templates),
``table_questions_holdout15.json`` on eleven more (LaTeX's font guide, texlive-latex-extra, publishers', pictures and
science manuals, xeCJK, TeX Live's Chinese guide, hanzibox, zhnumber), ``table_questions_holdout16.json`` on eleven
more (texlive-latex-extra manuals, nanicolle, an Asymptote tutorial in Chinese, hfutexam's answer sheet, codebox,
termsim), ``table_questions_holdout17.json`` on six more (texlive-science manuals, English only),
``table_questions_holdout18.json`` on twelve more (texlive-pictures and humanities manuals, R vignettes of partykit,
qtl and mixtools; English PDFs), ``table_questions_holdout19.json`` on ten more (R vignettes of metafor, survey, maxLik,
xts, Rcpp and robustbase, pgf-spectra's and two invoice packages' manuals; English PDFs),
``table_questions_holdout20.json`` on twelve more (R vignettes of actuar, deSolve, e1071, RcppEigen, spam, gmm and
RcppArmadillo, four MetaPost manuals and the euro package's; English PDFs), ``table_questions_holdout21.json`` on
twelve more (R vignettes of vegan, tm, rpart, gnm and mcmc, TeX Live's fontname, latex4wp and VPAT documents, the
Armenian, lilyglyphs and marvosym manuals; English PDFs), ``table_questions_holdout22.json`` on twelve more (R
vignettes of bit, Epi, party, pls, ape and BMS, four PSTricks manuals, MetaPost's drv guide and mfpic's manual; English
PDFs), ``table_questions_holdout23.json`` on twelve more (R vignettes of spatstat, surveillance, seriation, dbscan, TSP
and haplo.stats, the memoir and listings manuals, and TeX Live's statistics, nucleardata, pfdicons and bibleref-mouth
documents; English PDFs), ``table_questions_holdout24.json`` on twelve more (R vignettes of glmnet, sp, bbmle,
gstat, rrcov and mi, the csquotes, iso, media9 and animate manuals, and TeX Live's diffcoeff and numerica documents;
English PDFs), ``table_questions_holdout25.json`` on twelve more (R vignettes of eRm, BradleyTerry2 and psychotools,
three chapters of HSAUR3, the ghsystem, leipzig, xcolor-material and ltxkeys manuals, TeX Live's engtlc and
bibleref-parse documents; English PDFs), ``table_questions_holdout26.json`` on twelve more (R vignettes of msm,
markovchain, MNP, NMF, etm and genetics, GLPK's reference manual, and the emulateapj sample, NDSU thesis, JACoW,
HA-prosper and "Not So Short Introduction" documents of TeX Live; English PDFs). They are not copied into the
repository; this downloads the pinned packages with ``apt-get download`` (the Debian registry is reachable where PyPI
is), unpacks them with ``dpkg-deb`` and keeps the PDFs listed in ``data/debian_docs.tsv``, each checked against its
SHA-256 so that every run reads the bytes the questions were written on.
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

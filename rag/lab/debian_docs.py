"""``python -m rag.lab.debian_docs``: fetch the PDFs of the sixth to eleventh held-out table sets from Debian packages.

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
traditional-Chinese maintainer guide, Chinese thesis and report templates). They are not
copied into the repository; this downloads the pinned packages with ``apt-get download`` (the Debian
registry is reachable where PyPI is), unpacks them with ``dpkg-deb`` and keeps the listed PDFs, each
checked against its SHA-256 so that every run reads the bytes the questions were written on.
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


DOCS = (
    DebianDoc("countreg.pdf", "r-cran-pscl", "1.5.5-1+b1", "usr/lib/R/site-library/pscl/doc/countreg.pdf",
              "8ff9cb8331837ff2d21c4a840efbe4e5bdc10a1008edc0c39b8ba47d145cea04"),
    DebianDoc("sandwich-CL.pdf", "r-cran-sandwich", "3.0-2-1", "usr/lib/R/site-library/sandwich/doc/sandwich-CL.pdf",
              "f3a765482a629c8c9369020d13632ec5c37520df17e22266eb9e2928270e94bb"),
    DebianDoc("lmer.pdf", "r-cran-lme4", "1.1-31-1", "usr/lib/R/site-library/lme4/doc/lmer.pdf",
              "d13d6caf549b44c3543d01a7445c327ac472d266a8aee24f68a8d31d45d02ec9"),
    DebianDoc("compete.pdf", "r-cran-survival", "3.5-3-1", "usr/lib/R/library/survival/doc/compete.pdf",
              "1d83a2c90440051bef67554f06c942e418645a07e56d44e7cb1c42ba7c40ba88"),
    DebianDoc("survival.pdf", "r-cran-survival", "3.5-3-1", "usr/lib/R/library/survival/doc/survival.pdf",
              "d8e4cac102d76e25b9e0e224eb262e7db542c351e0f81b9c1c3f3fcf0a81436c"),
    DebianDoc("adjcurve.pdf", "r-cran-survival", "3.5-3-1", "usr/lib/R/library/survival/doc/adjcurve.pdf",
              "d1858bbdf1d573d09f52249e1dc9b688e1c052d3c0bd54853279c139309d761d"),
    DebianDoc("strucplot.pdf", "r-cran-vcd", "1:1.4-11-1", "usr/lib/R/site-library/vcd/doc/strucplot.pdf",
              "45dd7f7b8d6f3f5ca1816a585bb0e8410c4fe02c50876cd5174069b70a724b8c"),
    DebianDoc("lshort-zh-cn.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/lshort-chinese/lshort-zh-cn.pdf",
              "4f6b11c04054fcdbb23d6d3c8527b145d27c21abb9efa7e57f96be2b7def484c"),
    DebianDoc("install-latex-guide-zh-cn.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/install-latex-guide-zh-cn/install-latex-guide-zh-cn.pdf",
              "a841ed237fb074f65b1eb3c1e71dc6243deb133931f997ea8bf2c21e97b506a3"),
    DebianDoc("latex-notes-zh-cn.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/generic/latex-notes-zh-cn/latex-notes-zh-cn.pdf",
              "b8c93f6793f972a36321065e9fbec4dbda2073d725dd1cb6349855a5e7395cfb"),
    DebianDoc("ctex-faq.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/ctex-faq/ctex-faq.pdf",
              "99a72a3158ced551d516d926fa27c69606a1b02366aeaa79d376a8d60fae3fb2"),
    DebianDoc("njurepo-example.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/njurepo/example.pdf",
              "b326c9ee7b42040ae9c05000d1b0c9ea62dff7483ccc79b0785778ad6588702c"),
    DebianDoc("texproposal.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/texproposal/texproposal.pdf",
              "62c7104ce68de476b5db1b511aeaff46190495509acc1b73d00ffac1de0189a3"),
    # the seventh held-out set (table_questions_holdout7.json)
    DebianDoc("MAXtest.pdf", "r-cran-coin", "1.4-2-1+b1",
              "usr/lib/R/site-library/coin/doc/MAXtest.pdf",
              "72fa46702db8e213526f050aef50fb36c57ee2d84c065976a22fb80352e17cde"),
    DebianDoc("coin-Implementation.pdf", "r-cran-coin", "1.4-2-1+b1",
              "usr/lib/R/site-library/coin/doc/Implementation.pdf",
              "abfc4f61cb2b75bfa3b963f89a7eea1bc345d033f201d82c5f5d8ae79c1d82b5"),
    DebianDoc("crq.pdf", "r-cran-quantreg", "5.94-1",
              "usr/lib/R/site-library/quantreg/doc/crq.pdf",
              "e480d79e975428b982605324e4fae1d04ef3ba8ec5b26832f46c4dba20039160"),
    DebianDoc("ctex.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/ctex/ctex.pdf",
              "372421fadf1a7cc053f129e89ab53800c80643865498e4b0b297fc180e21e5d7"),
    DebianDoc("exam-zh-doc.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/xelatex/exam-zh/doc/exam-zh-doc.pdf",
              "c870f7f89b59f7a432bedfe80100c8ebfc390967fd279ff625b81d8e6fca076b"),
    DebianDoc("fduthesis.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/fduthesis/fduthesis.pdf",
              "b92af9f47649fc7281df0cebfd00312350b40e1baf73f0c433e8e3467a06d79c"),
    DebianDoc("fontspec.pdf", "texlive-latex-recommended-doc", "2022.20230122-3",
              "usr/share/doc/texlive-doc/latex/fontspec/fontspec.pdf",
              "811067aa38ccb352a77f58ce844896b1d9ea31b7e385f8e2bb13338ce812c33e"),
    DebianDoc("polyglossia.pdf", "texlive-latex-recommended-doc", "2022.20230122-3",
              "usr/share/doc/texlive-doc/latex/polyglossia/polyglossia.pdf",
              "cbe8265b0db057f834d4be1e8c834002c6977defed8b9b878f2cd009e1642f8d"),
    DebianDoc("qyxf-book-doc.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/qyxf-book/qyxf-book-doc.pdf",
              "cce3aec57449c26d39a3ab057f37f5cb0eae1709660fd16342d0245d4772eab7"),
    DebianDoc("tlmgr-intro-zh-cn.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/support/tlmgr-intro-zh-cn/tlmgr-intro-zh-cn.pdf",
              "93e839c880059150bbc09717ed2f1126b7d4721c3b99f0bf8b68bff0afb39b84"),
    DebianDoc("xcolor.pdf", "texlive-latex-recommended-doc", "2022.20230122-3",
              "usr/share/doc/texlive-doc/latex/xcolor/xcolor.pdf",
              "d354360b1216cf8c9618571434a34e9e7683c2cec426e6156b4c5fb80af49e41"),
    DebianDoc("zhlineskip.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/zhlineskip/zhlineskip.pdf",
              "c2ebbb8aae04bc08a27d5663cf3ce7f0e5af1c38c379fdd482706ddf422735e4"),
    DebianDoc("zhlipsum.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/zhlipsum/zhlipsum.pdf",
              "bcaa7e2fe66017fa756cc1db62f3c5ef98e65a255212b4001522b165155a17e3"),
    # the eighth held-out set (table_questions_holdout8.json)
    DebianDoc("SIunits.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/siunits/SIunits.pdf",
              "9741e005f1574a53cbf8f842bb2bc1f64f863b424819557ddae721f469e369a2"),
    DebianDoc("asymptote-manual-zh-cn.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/support/asymptote-manual-zh-cn/asymptote-manual-zh-cn.pdf",
              "acc757f0963ec1036465d86c2f19200fb888b960ae2562f5bf09b009e26536bb"),
    DebianDoc("chfls1.pdf", "r-cran-multcomp", "1.4-22-1",
              "usr/lib/R/site-library/multcomp/doc/chfls1.pdf",
              "20d0e642e02632d5563e0fb3a79ba791ea43e8f027b257a3b2dd6e767672a7c7"),
    DebianDoc("debian-edu-bookworm-manual.pdf", "debian-edu-doc-zh-cn", "2.12.23~deb12u1",
              "usr/share/doc/debian-edu-doc-zh-cn/debian-edu-bookworm-manual.pdf",
              "ad8572d784e52cd2fdbd5c54231ddc6dc288f00e26046d941e2378499eb000db"),
    DebianDoc("debian-edu-itil-manual.pdf", "debian-edu-doc-legacy-zh-cn", "2.12.23~deb12u1",
              "usr/share/doc/debian-edu-doc-legacy-zh-cn/debian-edu-itil-manual.pdf",
              "ded369ac45050e564910453733baf9cf6789eaf2cc93ec86adeb1e2d63863781"),
    DebianDoc("debian-reference.zh-cn.pdf", "debian-reference-zh-cn", "2.100",
              "usr/share/debian-reference/debian-reference.zh-cn.pdf",
              "93697b9d4a024eaf5adb2def25a646740fad405cb245032a6414222ae0e71bb1"),
    DebianDoc("generalsiminf.pdf", "r-cran-multcomp", "1.4-22-1",
              "usr/lib/R/site-library/multcomp/doc/generalsiminf.pdf",
              "261ba9e67d6b237891ccd8338f8b3e28b31f51b78b4fbe1fa5b392f998bef5e2"),
    DebianDoc("hepunits.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/hepunits/hepunits.pdf",
              "8b1fa9c8da22830bc1fead89359c76892cd7b124245c1b45114ccd2119acbda5"),
    DebianDoc("isomath.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/isomath/isomath.pdf",
              "66fb4a3d6ef4b7f49649e72053f3b15b705050b66ce76753bad56dc87e735e4c"),
    DebianDoc("maint-guide.zh-cn.pdf", "maint-guide-zh-cn", "1.2.53",
              "usr/share/doc/maint-guide-zh-cn/maint-guide.zh-cn.pdf",
              "6e3d3247fc675e6678d59663f886472ef7369c82c69036eb631d3651a4913709"),
    DebianDoc("rosegarden-manual.pdf", "debian-edu-doc-legacy-zh-cn", "2.12.23~deb12u1",
              "usr/share/doc/debian-edu-doc-legacy-zh-cn/rosegarden-manual.pdf",
              "46739db498cca83bcab1a910455c96f86b5dcffd6ff78957486d4020d0b88438"),
    DebianDoc("siunitx.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/siunitx/siunitx.pdf",
              "81c5b204c941295ccb1fde49c2b9490e29eb1503a676eaac9796caaaf049dfb5"),
    # the ninth held-out set (table_questions_holdout9.json)
    DebianDoc("clm_article.pdf", "r-cran-ordinal", "2022.11-16-1",
              "usr/lib/R/site-library/ordinal/doc/clm_article.pdf",
              "5675a6c1d47186dbff605dd8d5e5b5834dc6288a1e00d8d39a253b234e9a3a50"),
    DebianDoc("xtableGallery.pdf", "r-cran-xtable", "1:1.8-4-2",
              "usr/lib/R/site-library/xtable/doc/xtableGallery.pdf",
              "151023b27c2279437ed721b09d9e97920d332a099b8a138fea0a5529006caed4"),
    DebianDoc("intro.pdf", "r-cran-psych", "2.2.9-1",
              "usr/lib/R/site-library/psych/doc/intro.pdf",
              "93c05529e29fde8f4af6a32cd73f7ac426c802125e65d34a3ec021cfec36b779"),
    DebianDoc("microtype.pdf", "texlive-latex-recommended-doc", "2022.20230122-3",
              "usr/share/doc/texlive-doc/latex/microtype/microtype.pdf",
              "87d5dea67dac255eddac75106b3b382e7dc20cf91e493888357664c93a9308f4"),
    DebianDoc("mdwtab.pdf", "texlive-latex-recommended-doc", "2022.20230122-3",
              "usr/share/doc/texlive-doc/latex/mdwtools/mdwtab.pdf",
              "282ede7e8f098da2f77f4cc63b3b31723e45c669aecd218c29b83f7dbe24d078"),
    DebianDoc("model_evaluation.pdf", "r-cran-glmmtmb", "1.1.5+dfsg-4",
              "usr/lib/R/site-library/glmmTMB/doc/model_evaluation.pdf",
              "0f7a805ff11fae86ab59b0f7844e7d74a06eb68f05eca391fed32c8e36f511b7"),
    DebianDoc("debian-reference.zh-tw.pdf", "debian-reference-zh-tw", "2.100",
              "usr/share/debian-reference/debian-reference.zh-tw.pdf",
              "7dea6a9258163a7b5844ecc0bac4c22e28d9c91cd72eebbf9765de0be0682e7e"),
    DebianDoc("cnbook.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/plain/impatient-cn/cnbook.pdf",
              "5877680a44330d3c7b820247a4e48732d0d5612a1422034bf6174f461743b833"),
    DebianDoc("njuthesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/njuthesis/njuthesis.pdf",
              "d5465f2799affa660e9fd59666e2cc04ce020e50cff082af5a77794f8604c1f5"),
    DebianDoc("hitszthesis-bachelor.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/hitszthesis/hitszthesis-bachelor.pdf",
              "fcf219189d26d53abc8fd1afd65908b075164ac0919ef8891c87e5e9ea8248ae"),
    DebianDoc("shtthesis-user-guide.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/shtthesis/shtthesis-user-guide.pdf",
              "43f562d420d1cf30688d6a0328419ae37dde7cc2b48fabf130ed3d13b8a025ef"),
    DebianDoc("seuthesix.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/seuthesix/seuthesix.pdf",
              "edeeedbf2c9d1b603575573c926af1d444140441a709d10764131c02b250b399"),
    # the tenth held-out set (table_questions_holdout10.json)
    DebianDoc("thermodynamics.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/thermodynamics/thermodynamics.pdf",
              "9ce850b069695dce565c9f80b8d77eba4fa7a5243fbfccf8fcc4873ef72e76f1"),
    DebianDoc("unicode-math.pdf", "texlive-latex-recommended-doc", "2022.20230122-3",
              "usr/share/doc/texlive-doc/latex/unicode-math/unicode-math.pdf",
              "740d2dafd2922e91f5875cc45a658583ce99e6cb4e5356bca6118013a36b6e00"),
    DebianDoc("unitsdef.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/unitsdef/unitsdef.pdf",
              "1eb794d9f798479e3f8f2b2ad31e549d848b4af47f17b995ff787eb904fc16bd"),
    DebianDoc("numerica-tables.pdf", "texlive-science-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/numerica-tables/numerica-tables.pdf",
              "9dbc11edd8ccc7cb138d45a931b7089ace4f2e9e69bf6716064fc9c9899480b3"),
    DebianDoc("systemfit.pdf", "r-cran-systemfit", "1.1-28-1",
              "usr/lib/R/site-library/systemfit/doc/systemfit.pdf",
              "a9c46d6999b6941abd98486208f33447ad1baa4324cc3cc89da41d3c267c2860"),
    DebianDoc("rq.pdf", "r-cran-quantreg", "5.94-1",
              "usr/lib/R/site-library/quantreg/doc/rq.pdf",
              "7cced1efe41449cf450b24b9eff5974b83f0a56eb5a40ad58b7d8247993afa3b"),
    DebianDoc("nwafuthesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/nwafuthesis/nwafuthesis.pdf",
              "6c83525f3f14f44018fae1da7a191c78d3bc7d6303886324a6ebd62ffae0f0bf"),
    DebianDoc("xduts.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/xelatex/xduts/xduts.pdf",
              "8974aa83d643e2d9a02a22d4030df2160d66c60c9dd8def22ef5a77a7d3eb06f"),
    DebianDoc("xmuthesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/xmuthesis/xmuthesis.pdf",
              "ff663831937834689111f5d9cf39979443f954fd938f411cd3f16fb8a730a758"),
    DebianDoc("buctthesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/xelatex/buctthesis/buctthesis.pdf",
              "5709d3db51f5001e6d4112481f3667f67efae3ab44dd2c6f1f3ae4e48498e9f5"),
    DebianDoc("thuthesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/thuthesis/thuthesis.pdf",
              "214f016e50538499351a9b7bf440a6a5aed63f1b2705fd7861b2b3034074c153"),
    DebianDoc("hfutthesis-doc.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/xelatex/hfutthesis/hfutthesis-doc.pdf",
              "73e833b232b2e64cf9c7a6ada9ac009a5713f65265cccbfb7bfe7a2dfbb030d4"),
    # the eleventh held-out set (table_questions_holdout11.json)
    DebianDoc("lua-physical.pdf", "texlive-latex-extra-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/lualatex/lua-physical/lua-physical.pdf",
              "8b9a7351f91f95b2ee5381477a09f797df5b4a9a65fc403d1ef382ac303ac5e5"),
    DebianDoc("elguide.pdf", "texlive-latex-extra-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/envlab/elguide.pdf",
              "244a83aad9043034b73fb38fbfb8a1ab9e71bb7ab1ba5c4a0cace272bd738627"),
    DebianDoc("mnras_guide.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/mnras/mnras_guide.pdf",
              "54c467301c93b3ed0662c9ed6ee23f71204219ed642dcf259b8cd9383d28cc70"),
    DebianDoc("acmguide.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/acmart/acmguide.pdf",
              "f2b8dda02fed716610a3264b4158506419c28553f4f1e6cab292742fffe20932"),
    DebianDoc("sample631.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/aastex/sample631.pdf",
              "efd8d980ed4d339dd1524bab8f282e1cb80acfb709c82810b84f529781706197"),
    DebianDoc("paper2JSS.pdf", "r-cran-fitdistrplus", "1.1-8-1",
              "usr/lib/R/site-library/fitdistrplus/doc/paper2JSS.pdf",
              "873307d5c87cc73699dc760f74a9dff10e811ec6b111ffaaf05be3a77760c522"),
    DebianDoc("maint-guide.zh-tw.pdf", "maint-guide-zh-tw", "1.2.53",
              "usr/share/doc/maint-guide-zh-tw/maint-guide.zh-tw.pdf",
              "6429e3d3d3b835e94c64eeefe1d08eb9e7008da8395a52544e50a5a503bc178f"),
    DebianDoc("uestcthesis-doc.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/uestcthesis/doc/uestcthesis-doc.pdf",
              "9870299ed18f023b72162a98aeea1c41a404dced46082299c500d9f2d0be61ea"),
    DebianDoc("CQU-Example.pdf", "texlive-lang-chinese", "2022.20230122-1",
              "usr/share/doc/texlive-doc/latex/texproposal/figures/CQU-Example.pdf",
              "c33d8da3769f477e1e600b2ce429368736541aea91e86c27216257614d756776"),
    DebianDoc("hitreport.pdf", "texlive-latex-extra-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/hitreport/hitreport.pdf",
              "6ed2671c348aa52c18cb1b2a2fa32337815a1de5757c4e8c81153aa3d5211bb9"),
    DebianDoc("hithesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/xelatex/hithesis/hithesis.pdf",
              "5ae905cf51ddaa2f0310128c457cba335094d5c78efa044a164d1b86b2a35c87"),
    DebianDoc("hustthesis.pdf", "texlive-publishers-doc", "2022.20230122-4",
              "usr/share/doc/texlive-doc/latex/hustthesis/hustthesis.pdf",
              "f998bb0fe90f7e04f467ab39e2482afede2eabb3f11b8eda28f80ca69eccb593"),
)


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

"""An uploaded question set (the Evaluation page): a CSV, a SQuAD-style JSON or a zipped BEIR folder.

The file is untrusted. A zip is checked before anything is written: at most ``MAX_MEMBERS`` members, at
most ``MAX_UNPACKED_BYTES`` unpacked in all (so a small "zip bomb" cannot fill the disk), no member that
would land outside the upload's folder (absolute paths, ``..``), and no links.
"""

from __future__ import annotations

import hashlib
import io
import stat
import zipfile
from dataclasses import replace
from pathlib import Path, PurePosixPath

from rag.evaluation.datasets import load_dataset
from rag.evaluation.sets import EvalDataset

UPLOAD_SUFFIXES = (".csv", ".json", ".zip")
MAX_MEMBERS = 1000  # a BEIR folder holds four files
MAX_UNPACKED_BYTES = 512 * 1024 * 1024  # SciFact's folder unpacks to 8 MB; the largest BEIR sets reach ~500 MB


def load_upload(file_name: str, data: bytes, workdir: Path) -> EvalDataset:
    """Load an uploaded question set: ``.csv``, SQuAD-style ``.json`` or a ``.zip`` of a BEIR folder.

    The set is named ``<stem>-<content hash>``: the evaluation index is cached by name and corpus
    ids, and SQuAD ids are positional, so two different uploads with one file name must not share
    a cached index.

    Raises:
        ValueError: Unsupported file type, a zip that is too large, has too many members or members
            outside its folder, a zip without ``corpus.jsonl``, or a malformed file.
        FileNotFoundError: A BEIR folder without its queries or qrels.
    """
    name = Path(file_name).name
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise ValueError(f"{name}: expected a .csv, a SQuAD-style .json or a .zip of a BEIR folder")
    digest = hashlib.sha256(data).hexdigest()[:8]
    folder = Path(workdir) / digest
    folder.mkdir(parents=True, exist_ok=True)
    if suffix == ".zip":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                check_archive(archive, name)
                archive.extractall(folder)
        except zipfile.BadZipFile as exc:
            raise ValueError(f"{name}: not a readable zip file ({exc})") from None
        corpora = sorted(folder.rglob("corpus.jsonl"), key=lambda p: len(p.parts))
        if not corpora:
            raise ValueError(f"{name}: no corpus.jsonl inside; zip a BEIR folder "
                             "(corpus.jsonl, queries.jsonl, qrels/test.tsv)")
        path = corpora[0].parent
    else:
        path = folder / name
        path.write_bytes(data)
    try:
        dataset = load_dataset(path)
    except (KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}: not a question set this app can read ({type(exc).__name__}: {exc})") from None
    except ValueError as exc:  # json.JSONDecodeError is one
        raise ValueError(f"{name}: {exc}") from None
    if not dataset.queries:
        raise ValueError(f"{name}: no usable questions found" + (f" ({dataset.skipped_note()})" if dataset.skipped else ""))
    return replace(dataset, name=f"{Path(name).stem}-{digest}")


def check_archive(archive: zipfile.ZipFile, name: str) -> None:
    """Refuse a zip before extracting it: too many members, too much unpacked, or a member that is a link or
    would be written outside the extraction folder.

    Raises:
        ValueError: Saying which limit the archive breaks.
    """
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise ValueError(f"{name}: {len(members):,} files inside; a question-set zip holds a few (at most "
                         f"{MAX_MEMBERS:,})")
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise ValueError(f"{name}: unpacks to {unpacked / 2**20:,.0f} MB, over the {MAX_UNPACKED_BYTES // 2**20} MB "
                         "limit for an uploaded question set")
    for member in members:
        path = PurePosixPath(member.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or (path.parts and path.parts[0].endswith(":")):
            raise ValueError(f"{name}: the member {member.filename!r} would be written outside the upload's folder")
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ValueError(f"{name}: the member {member.filename!r} is a link; a question set holds plain files")

"""Taking in a submission: a folder holding `cs336_basics/`, that folder itself, or a zip of either.

Only regular files of the `cs336_basics` package are taken. Symbolic links and hard links are
refused (one could point at the reference solution on the grading machine), zip entries may not
climb out of the destination, entry counts and sizes are capped before anything is read (a zip's
own directory is checked first, so a zip of a million entries is refused at once), and every way a
zip member can fail to read (encrypted, an unknown compression method, corrupt data) becomes a
message. A broken or hostile archive therefore yields a clear message, never a crash or a mess.
Messages name what is inside the upload, never where the grading machine keeps it.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path, PurePosixPath

PACKAGE = "cs336_basics"
MAX_TOTAL_BYTES = 50 * 2**20
MAX_FILES = 2000
MAX_ZIP_ENTRIES = 10 * MAX_FILES  # entries of a whole upload, inside the package or not
SKIPPED_PARTS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints"}
_EOCD, _ZIP64_EOCD = b"PK\x05\x06", b"PK\x06\x06"


class SubmissionError(Exception):
    """The submission cannot be graded; the message is written for the student."""


def _skipped(parts: tuple[str, ...]) -> bool:
    return any(part in SKIPPED_PARTS or part.startswith("._") for part in parts) or parts[-1].endswith(".pyc")


def zip_entry_count(archive: Path) -> int | None:
    """How many entries a zip's end-of-central-directory record announces, read from the file's tail
    without parsing the directory; None when there is no such record (not a zip)."""
    with archive.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(size - (1 << 16) - 22, 0))
        tail = handle.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) < at + 22:
        return None
    count = struct.unpack("<H", tail[at + 10 : at + 12])[0]
    at64 = tail.rfind(_ZIP64_EOCD, 0, at)
    if count == 0xFFFF and at64 >= 0 and len(tail) >= at64 + 40:
        count = struct.unpack("<Q", tail[at64 + 32 : at64 + 40])[0]
    return count


def _package_root_in_zip(names: list[str]) -> PurePosixPath:
    """Where the package folder sits inside the zip: at the top, or one folder down."""
    candidates = set()
    for name in names:
        parts = PurePosixPath(name).parts
        if PACKAGE in parts[:3] and not _skipped(parts):
            candidates.add(PurePosixPath(*parts[: parts.index(PACKAGE) + 1]))
    if len(candidates) != 1:
        found = "none" if not candidates else ", ".join(sorted(map(str, candidates)))
        raise SubmissionError(f"the zip should hold exactly one {PACKAGE}/ folder (at its top level); found: {found}")
    return candidates.pop()


def _too_large(where: str) -> SubmissionError:
    return SubmissionError(f"{where} is too large (limit {MAX_FILES} files, {MAX_TOTAL_BYTES // 2**20} MiB)")


def _extract_zip(archive: Path, dest: Path) -> None:
    count = zip_entry_count(archive)
    if count is not None and count > MAX_ZIP_ENTRIES:
        raise SubmissionError(f"the zip holds {count} entries; at most {MAX_ZIP_ENTRIES} are accepted")
    name = ""
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                raise SubmissionError(f"the zip holds {len(infos)} entries; at most {MAX_ZIP_ENTRIES} are accepted")
            for info in infos:
                parts = PurePosixPath(info.filename).parts
                if info.filename.startswith("/") or ".." in parts or "\\" in info.filename:
                    raise SubmissionError(f"unsafe path in zip: {info.filename!r}")
            root = _package_root_in_zip([i.filename for i in infos])
            chosen = []
            for info in infos:
                path = PurePosixPath(info.filename)
                if info.is_dir() or _skipped(path.parts) or path.parts[: len(root.parts)] != root.parts:
                    continue
                relative = PurePosixPath(*path.parts[len(root.parts):])
                if relative.parts:
                    chosen.append((info, relative))
            if len(chosen) > MAX_FILES or sum(i.file_size for i, _ in chosen) > MAX_TOTAL_BYTES:
                raise _too_large(f"{PACKAGE}/ in the zip")
            written = 0
            for info, relative in chosen:
                name = info.filename
                target = dest.joinpath(*relative.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as out:
                    while chunk := src.read(1 << 16):  # sizes in the directory can lie: count what comes out
                        written += len(chunk)
                        if written > MAX_TOTAL_BYTES:
                            raise _too_large(f"{PACKAGE}/ in the zip, once unpacked,")
                        out.write(chunk)
    except SubmissionError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError) as error:
        raise SubmissionError(f"could not read the zip {archive.name}{f' at {name}' if name else ''}: {error}") \
            from error
    except RuntimeError as error:  # zipfile's way of saying "encrypted, password required"
        raise SubmissionError(f"could not read {name or archive.name} in the zip: {error}; "
                              f"make the zip without a password") from error
    except NotImplementedError as error:  # an unknown compression method
        raise SubmissionError(f"could not read {name or archive.name} in the zip: {error}; "
                              f"make the zip with the usual compression (deflate)") from error


def _copy_folder(package: Path, dest: Path) -> None:
    files = [p for p in package.rglob("*") if not _skipped(p.relative_to(package).parts)]
    links = [p for p in files if p.is_symlink()]
    if links:
        names = ", ".join(str(p.relative_to(package)) for p in links)
        raise SubmissionError(f"symbolic links are not accepted: {names}")
    regular = [p for p in files if stat.S_ISREG(p.lstat().st_mode)]
    if len(regular) > MAX_FILES or sum(p.lstat().st_size for p in regular) > MAX_TOTAL_BYTES:
        raise _too_large(f"{PACKAGE}/")
    linked = [p for p in regular if p.lstat().st_nlink > 1]
    if linked:
        raise SubmissionError(f"hard links are not accepted: {', '.join(str(p.relative_to(package)) for p in linked)}")
    for path in regular:
        target = dest / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        with path.open("rb") as src, target.open("wb") as out:
            out.write(src.read(MAX_TOTAL_BYTES + 1))


def find_upload(submission: Path) -> Path:
    """What to take in from `submission`: the path itself, or, for a folder that holds no package
    but exactly one zip (Gradescope's submission folder or export after a zip upload), that zip."""
    if submission.is_dir() and not (submission / PACKAGE).exists() and submission.name != PACKAGE:
        zips = sorted(p for p in submission.iterdir() if p.suffix == ".zip" and p.is_file() and not p.is_symlink())
        if len(zips) == 1:
            return zips[0]
    return submission


def find_package(submission: Path) -> Path | None:
    """The `cs336_basics` folder of a submission folder, or None for a zip."""
    if submission.is_dir():
        if submission.name == PACKAGE:
            return submission
        if (submission / PACKAGE).is_dir():
            return submission / PACKAGE
        names = sorted(p.name + "/" * p.is_dir() for p in submission.iterdir())
        found = f"found: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''}" if names else "it is empty"
        raise SubmissionError(f"the submission holds no {PACKAGE}/ folder ({found})")
    return None


def lay_package(submission: Path, dest: Path) -> None:
    """Copy the submission's `cs336_basics` package into `dest` (which must not exist yet).

    Raises:
        SubmissionError: the submission is unusable; the message says why.
    """
    dest.mkdir(parents=True)
    submission = find_upload(submission)
    package = find_package(submission)
    if package is not None:
        if package.is_symlink():
            raise SubmissionError(f"{PACKAGE}/ is a symbolic link; submit the folder itself")
        _copy_folder(package, dest)
    elif submission.is_file() and zipfile.is_zipfile(submission):
        _extract_zip(submission, dest)
    else:
        raise SubmissionError(f"{submission.name} is neither a folder nor a zip file")
    folders = [p.relative_to(dest).as_posix() for p in dest.rglob("*.py") if p.is_dir()]
    if folders:
        raise SubmissionError(f"{PACKAGE}/{folders[0]} is a folder; a name ending in .py must be a Python file")
    if not any(p.is_file() for p in dest.rglob("*.py")):
        raise SubmissionError(f"the submitted {PACKAGE}/ holds no Python files")
    # Without __init__.py the package would be a namespace package, which a regular package of the
    # same name elsewhere on sys.path would shadow; an empty one is what the student meant.
    (dest / "__init__.py").touch(exist_ok=True)

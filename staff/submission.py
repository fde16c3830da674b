"""Taking in a submission: a folder holding `cs336_basics/`, that folder itself, or a zip of either.

Only regular files of the `cs336_basics` package are taken. Symbolic links are refused (one could
point at the reference solution on the grading machine), zip entries may not climb out of the
destination, and sizes are capped, so a broken or hostile archive yields a clear message instead
of a crash or a mess.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

PACKAGE = "cs336_basics"
MAX_TOTAL_BYTES = 50 * 2**20
MAX_FILES = 2000
SKIPPED_PARTS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints"}


class SubmissionError(Exception):
    """The submission cannot be graded; the message is written for the student."""


def _skipped(parts: tuple[str, ...]) -> bool:
    return any(part in SKIPPED_PARTS or part.startswith("._") for part in parts) or parts[-1].endswith(".pyc")


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


def _extract_zip(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            root = _package_root_in_zip([i.filename for i in infos])
            chosen = []
            for info in infos:
                path = PurePosixPath(info.filename)
                if info.is_dir() or _skipped(path.parts) or root not in path.parents:
                    continue
                relative = path.relative_to(root)
                if path.is_absolute() or ".." in relative.parts or "\\" in info.filename:
                    raise SubmissionError(f"unsafe path in zip: {info.filename!r}")
                chosen.append((info, relative))
            if len(chosen) > MAX_FILES or sum(i.file_size for i, _ in chosen) > MAX_TOTAL_BYTES:
                raise SubmissionError(f"{PACKAGE}/ in the zip is too large (limit {MAX_FILES} files, "
                                      f"{MAX_TOTAL_BYTES // 2**20} MiB)")
            for info, relative in chosen:
                target = dest.joinpath(*relative.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as out:
                    shutil.copyfileobj(src, out)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
        raise SubmissionError(f"could not read the zip {archive.name}: {error}") from error


def _copy_folder(package: Path, dest: Path) -> None:
    files = [p for p in package.rglob("*") if not _skipped(p.relative_to(package).parts)]
    links = [p for p in files if p.is_symlink()]
    if links:
        raise SubmissionError(f"symbolic links are not accepted: {', '.join(str(p.relative_to(package)) for p in links)}")
    regular = [p for p in files if p.is_file()]
    if len(regular) > MAX_FILES or sum(p.stat().st_size for p in regular) > MAX_TOTAL_BYTES:
        raise SubmissionError(f"{package} is too large (limit {MAX_FILES} files, {MAX_TOTAL_BYTES // 2**20} MiB)")
    for path in regular:
        target = dest / path.relative_to(package)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def find_package(submission: Path) -> Path | None:
    """The `cs336_basics` folder of a submission folder, or None for a zip."""
    if submission.is_dir():
        if submission.name == PACKAGE:
            return submission
        if (submission / PACKAGE).is_dir():
            return submission / PACKAGE
        raise SubmissionError(f"{submission} holds no {PACKAGE}/ folder")
    return None


def lay_package(submission: Path, dest: Path) -> None:
    """Copy the submission's `cs336_basics` package into `dest` (which must not exist yet).

    Raises:
        SubmissionError: the submission is unusable; the message says why.
    """
    dest.mkdir(parents=True)
    package = find_package(submission)
    if package is not None:
        if package.is_symlink():
            raise SubmissionError(f"{package} is a symbolic link; submit the folder itself")
        _copy_folder(package, dest)
    elif zipfile.is_zipfile(submission):
        _extract_zip(submission, dest)
    else:
        raise SubmissionError(f"{submission.name} is neither a folder nor a zip file")
    if not any(dest.rglob("*.py")):
        raise SubmissionError(f"the submitted {PACKAGE}/ holds no Python files")
    # Without __init__.py the package would be a namespace package, which a regular package of the
    # same name elsewhere on sys.path would shadow; an empty one is what the student meant.
    (dest / "__init__.py").touch(exist_ok=True)

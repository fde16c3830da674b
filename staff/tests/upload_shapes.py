"""The shapes in which students really upload, each built from a `cs336_basics` folder of code.

Gradescope puts an upload into /autograder/submission: a zip arrives unpacked there (its folders
kept), files dragged into the dialog arrive flat, a GitHub or Bitbucket submission arrives as the
repository's tree. `staff grade` and a batch also meet zips kept as zips. Each `Shape` builds one
such upload inside an empty folder and says what the intake must make of it: the code graded (and
from which folder of the upload), or the message that names what it found and how to upload.
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from staff.samples import REPO_ROOT


@dataclass(frozen=True)
class Shape:
    name: str
    build: Callable[[Path, Path], Path]  # (empty folder, code: a cs336_basics folder) -> what to grade
    graded_from: str | None  # where in the upload the code is found; None: ambiguous or nothing to grade
    message: tuple[str, ...] = ()  # what the intake's message must say (when graded_from is None)
    not_graded: tuple[str, ...] = ()  # what the "Not graded" notes must name


def _files(code: Path) -> list[Path]:
    return sorted(p for p in code.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _copy_package(code: Path, dest: Path) -> Path:
    shutil.copytree(code, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _zip(archive: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return archive


def _members(code: Path, top: str = "", sep: str = "/") -> dict[str, bytes]:
    """The package's files as zip members named `top`/`path` (with `sep` between folders)."""
    prefix = f"{top}{sep}" if top else ""
    return {prefix + sep.join(p.relative_to(code.parent).parts): p.read_bytes() for p in _files(code)}


def _repository(folder: Path, code: Path) -> Path:
    """A clone of the student release as a student's machine holds it: the package beside the release's
    other folders (whose adapters/ has modules of the same names), a virtual environment holding an
    installed copy of the package, git's folder and a notebook's checkpoints."""
    _copy_package(code, folder / "cs336_basics")
    for shipped in ("adapters", "tests"):
        shutil.copytree(REPO_ROOT / shipped, folder / shipped, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (folder / "README.md").write_text("# CS336 basics\n")
    (folder / "pyproject.toml").write_text("[project]\nname = 'cs336-basics'\n")
    stale = folder / ".venv" / "lib" / "python3.12" / "site-packages" / "cs336_basics"
    stale.mkdir(parents=True)
    (stale / "flops.py").write_text("# an old installed copy\n")
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    checkpoints = folder / "cs336_basics" / ".ipynb_checkpoints"
    checkpoints.mkdir()
    (checkpoints / "flops-checkpoint.py").write_text("# a notebook's autosave\n")
    return folder


def make_submission_zip(dest: Path, code: Path) -> Path:
    """The release's make_submission.sh zip, left as a zip in the submission folder."""
    _zip(dest / "cs336-basics-submission.zip", _members(code))
    return dest


def make_submission_unpacked(dest: Path, code: Path) -> Path:
    _copy_package(code, dest / "cs336_basics")
    return dest


def repository_folder_unpacked(dest: Path, code: Path) -> Path:
    """A zip of the student's whole repository folder, unpacked by Gradescope: myrepo-main/cs336_basics/..."""
    _repository(dest / "myrepo-main", code)
    return dest


def github_download_unpacked(dest: Path, code: Path) -> Path:
    """GitHub's "Download ZIP" of a fork, unpacked, with macOS's resource forks beside it."""
    folder = _repository(dest / "assignment1-basics-main", code)
    shutil.rmtree(folder / ".venv")
    (folder / ".github" / "workflows").mkdir(parents=True)
    (dest / "__MACOSX" / "assignment1-basics-main" / "cs336_basics").mkdir(parents=True)
    (dest / "__MACOSX" / "assignment1-basics-main" / "cs336_basics" / "._flops.py").write_bytes(b"\0\5\26\7")
    return dest


def github_repository_one_folder_down(dest: Path, code: Path) -> Path:
    """A GitHub submission whose package sits one folder down: assignment1-basics/cs336_basics/..."""
    _copy_package(code, dest / "assignment1-basics" / "cs336_basics")
    (dest / "README.md").write_text("my work\n")
    return dest


def repository_named_like_the_package(dest: Path, code: Path) -> Path:
    """A repository cloned into a folder named cs336_basics, zipped whole: cs336_basics/cs336_basics/..."""
    _repository(dest / "cs336_basics", code)
    return dest


def files_dragged_in(dest: Path, code: Path) -> Path:
    """The package's .py files dragged into the upload dialog one by one: flat, no folder."""
    for path in code.glob("*.py"):
        shutil.copyfile(path, dest / path.name)
    return dest


def files_dragged_in_without_init(dest: Path, code: Path) -> Path:
    files_dragged_in(dest, code)
    (dest / "__init__.py").unlink()
    return dest


def zip_of_loose_files(dest: Path, code: Path) -> Path:
    """A zip of the module files themselves, no folder, kept as a zip."""
    _zip(dest / "my-code.zip", {p.name: p.read_bytes() for p in code.glob("*.py")})
    return dest


def windows_zip(dest: Path, code: Path) -> Path:
    """A zip made on Windows: entries named cs336_basics\\flops.py."""
    _zip(dest / "submission.zip", _members(code, sep="\\"))
    return dest


def windows_zip_unpacked_with_backslashes(dest: Path, code: Path) -> Path:
    """That zip unpacked by a tool that keeps the backslashes: files named "cs336_basics\\flops.py"."""
    for path in _files(code):
        (dest / "\\".join(path.relative_to(code.parent).parts)).write_bytes(path.read_bytes())
    return dest


def zip_inside_a_zip(dest: Path, code: Path) -> Path:
    inner = _zip(dest / "inner.zip", _members(code))
    _zip(dest / "outer.zip", {"cs336-basics-submission.zip": inner.read_bytes()})
    inner.unlink()
    return dest


def the_same_zip_twice(dest: Path, code: Path) -> Path:
    """The same archive uploaded twice under two names: one upload made twice, not ambiguous."""
    _zip(dest / "cs336-basics-submission.zip", _members(code))
    shutil.copyfile(dest / "cs336-basics-submission.zip", dest / "cs336-basics-submission (1).zip")
    return dest


def two_different_zips(dest: Path, code: Path) -> Path:
    _zip(dest / "attempt-1.zip", _members(code))
    members = _members(code)
    members["cs336_basics/flops.py"] += b"\n# changed later\n"
    _zip(dest / "attempt-2.zip", members)
    return dest


def two_different_packages(dest: Path, code: Path) -> Path:
    _copy_package(code, dest / "old" / "cs336_basics")
    (_copy_package(code, dest / "new" / "cs336_basics") / "train.py").write_text("# rewritten\n")
    return dest


def loose_modules_in_two_folders(dest: Path, code: Path) -> Path:
    for name in ("draft", "final"):
        (dest / name).mkdir()
        files_dragged_in(dest / name, code)
    (dest / "final" / "data.py").write_text("# final\n")
    return dest


def repository_with_a_stale_submission_zip(dest: Path, code: Path) -> Path:
    """A repository folder holding the zip make_submission.sh wrote before the last change."""
    folder = _repository(dest / "myrepo", code)
    members = _members(code)
    members["cs336_basics/optimizer.py"] = b"# before the last change\n"
    _zip(folder / "cs336-basics-submission.zip", members)
    return dest


def repository_with_its_fresh_submission_zip(dest: Path, code: Path) -> Path:
    folder = _repository(dest / "myrepo", code)
    _zip(folder / "cs336-basics-submission.zip", _members(code))
    return dest


def package_at_the_top_beside_an_older_zip(dest: Path, code: Path) -> Path:
    """cs336_basics/ at the top (as make_submission.sh's zip unpacks) and an older zip dragged in too: the
    package at the top is the upload, as it always was; the zip's copy is named, not graded."""
    _copy_package(code, dest / "cs336_basics")
    members = _members(code)
    members["cs336_basics/optimizer.py"] = b"# before the last change\n"
    _zip(dest / "cs336-basics-submission-old.zip", members)
    return dest


def notebook_checkpoints_beside_the_package(dest: Path, code: Path) -> Path:
    _copy_package(code, dest / "cs336_basics")
    copy = _copy_package(code, dest / ".ipynb_checkpoints" / "cs336_basics")
    (copy / "flops.py").write_text("# an autosave\n")
    return dest


def package_folder_named_otherwise(dest: Path, code: Path) -> Path:
    """The package's files in a folder named cs336_basics-main (a renamed download)."""
    _copy_package(code, dest / "cs336_basics-main")
    return dest


def zip_with_a_top_folder_and_a_loose_module(dest: Path, code: Path) -> Path:
    """A zip of my-work/cs336_basics/... with an old copy of one module loose at its top, unpacked."""
    _copy_package(code, dest / "my-work" / "cs336_basics")
    (dest / "my-work" / "flops.py").write_text("# an old copy\n")
    return dest


def a_tarball(dest: Path, code: Path) -> Path:
    shutil.make_archive(str(dest / "submission"), "gztar", code.parent, code.name)
    return dest


def nothing(dest: Path, code: Path) -> Path:
    return dest


def zip_kept_as_the_file_graded(dest: Path, code: Path) -> Path:
    """`staff grade work.zip`: the zip itself is the upload (a batch's zip, a TA's local file)."""
    return _zip(dest / "work.zip", _members(code, top="work"))


SHAPES = [
    Shape("make-submission-zip", make_submission_zip, "cs336-basics-submission.zip/cs336_basics/"),
    Shape("make-submission-unpacked", make_submission_unpacked, "cs336_basics/"),
    Shape("repository-folder-unpacked", repository_folder_unpacked, "myrepo-main/cs336_basics/"),
    Shape("github-download-unpacked", github_download_unpacked, "assignment1-basics-main/cs336_basics/"),
    Shape("github-repository-one-folder-down", github_repository_one_folder_down, "assignment1-basics/cs336_basics/"),
    Shape("repository-named-like-the-package", repository_named_like_the_package, "cs336_basics/cs336_basics/"),
    Shape("files-dragged-in", files_dragged_in, "the top level"),
    Shape("files-dragged-in-without-init", files_dragged_in_without_init, "the top level"),
    Shape("zip-of-loose-files", zip_of_loose_files, "my-code.zip/"),
    Shape("windows-zip", windows_zip, "submission.zip/cs336_basics/"),
    Shape("windows-zip-unpacked-with-backslashes", windows_zip_unpacked_with_backslashes, "cs336_basics/"),
    Shape("zip-inside-a-zip", zip_inside_a_zip, "outer.zip/cs336-basics-submission.zip/cs336_basics/"),
    Shape("the-same-zip-twice", the_same_zip_twice, "cs336-basics-submission (1).zip/cs336_basics/",
          not_graded=("cs336-basics-submission.zip/cs336_basics/ holds the same files",)),
    Shape("repository-with-its-fresh-submission-zip", repository_with_its_fresh_submission_zip,
          "myrepo/cs336_basics/", not_graded=("myrepo/cs336-basics-submission.zip/cs336_basics/ holds the same",)),
    Shape("package-at-the-top-beside-an-older-zip", package_at_the_top_beside_an_older_zip, "cs336_basics/",
          not_graded=("cs336-basics-submission-old.zip/cs336_basics/: another copy of cs336_basics/ deeper",)),
    Shape("notebook-checkpoints-beside-the-package", notebook_checkpoints_beside_the_package, "cs336_basics/"),
    Shape("package-folder-named-otherwise", package_folder_named_otherwise, "cs336_basics-main/"),
    Shape("zip-with-a-top-folder-and-a-loose-module", zip_with_a_top_folder_and_a_loose_module,
          "my-work/cs336_basics/", not_graded=("flops.py at my-work/, a loose copy",)),
    Shape("zip-kept-as-the-file-graded", zip_kept_as_the_file_graded, "work.zip/work/cs336_basics/"),
    Shape("two-different-zips", two_different_zips, None,
          ("2 different cs336_basics/ folders", "attempt-1.zip/cs336_basics/", "attempt-2.zip/cs336_basics/",
           "differ in flops.py", "make_submission.sh")),
    Shape("two-different-packages", two_different_packages, None,
          ("new/cs336_basics/", "old/cs336_basics/", "differ in train.py", "make_submission.sh")),
    Shape("loose-modules-in-two-folders", loose_modules_in_two_folders, None,
          ("draft/", "final/", "differ in data.py", "make_submission.sh")),
    Shape("repository-with-a-stale-submission-zip", repository_with_a_stale_submission_zip, None,
          ("myrepo/cs336_basics/", "myrepo/cs336-basics-submission.zip/cs336_basics/", "differ in optimizer.py")),
    Shape("a-tarball", a_tarball, None, ("found: submission.tar.gz", "zip files only", "make_submission.sh")),
    Shape("nothing", nothing, None, ("no cs336_basics/ folder", "; it is empty.", "make_submission.sh")),
]

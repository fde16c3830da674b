"""Taking in a submission: the `cs336_basics` package found in an upload, whatever its wrapping, laid out
for grading, and a line for the student saying which files were graded.

`staff.intake.upload` reads the upload (a folder, a zip, zips inside either, Windows names as paths). In it
the package is what a person would take:

1. the folder named `cs336_basics` that holds `__init__.py` or one of the assignment's modules, at most
   MAX_PACKAGE_DEPTH folders down (a zip counts as a folder): a repository's folder zipped and unpacked
   by Gradescope (`myrepo-main/cs336_basics/`), GitHub's "Download ZIP", a repository one folder down;
2. where there is none, the folder whose own files include the assignment's modules by name (those
   `PROBLEMS` declares: `dtype_memory.py`, ...): files dragged in one by one, a zip of them with no
   folder, a package folder under another name (`cs336_basics-main/`). Its `.py` files are taken.

The release's other folders never count (`adapters/` holds modules of the same names). Candidates of
the same kind that hold the same files are one upload made twice (the shallowest is graded); two that
differ are ambiguous, and the student is told what was found and how to upload, never given a guess.
Loose copies of modules beside a package folder are not graded, and the line says so. Inside what is
graded, symbolic and hard links are refused, and sizes and counts are capped.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from staff.errors import StaffError
from staff.intake.upload import (
    HARD_LINK,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    PACKAGE,
    SYMBOLIC_LINK,
    Entry,
    Listing,
    UploadError,
    opened,
    zip_entry_count,
)
from tests.problems import PROBLEMS

__all__ = ["PACKAGE", "Intake", "SubmissionError", "lay_package", "zip_entry_count"]

MODULE_FILES = frozenset(f"{problem.module}.py" for problem in PROBLEMS.values())
MAX_PACKAGE_DEPTH = 5  # folders from the top of the upload to the package's, the package's own included
# The student release's other folders: adapters/ names its modules as cs336_basics/ does, so a repository
# uploaded whole would otherwise show a second set of modules.
OTHER_FOLDERS = frozenset({"adapters", "tests", "handout"})
ARCHIVES_NOT_READ = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".7z", ".rar", ".gz")
HOW_TO_UPLOAD = ("To upload your code, run ./make_submission.sh in your repository and upload the one zip it writes "
                 f"(or upload the {PACKAGE}/ folder alone).")
LISTED_FILES = 30  # files the graded-files line names one by one
MAX_CANDIDATES = 8  # copies of the package compared (each read whole); more is ambiguous without reading


class SubmissionError(StaffError):
    """The submission cannot be graded; the message is written for the student."""


@dataclass(frozen=True)
class Candidate:
    """A folder of the upload that could be the package: `files` maps a path inside the package to the
    upload's file; `named` says the folder is called cs336_basics (else its files are loose modules)."""

    root: PurePosixPath
    files: tuple[tuple[PurePosixPath, Entry], ...]
    named: bool
    linked: bool = False  # the folder is a symbolic link

    @property
    def where(self) -> str:
        return f"{self.root}/" if self.root.parts else "the top level"


@dataclass(frozen=True)
class Intake:
    """What was graded: where it was in the upload, its files (path in the package -> bytes), and what of
    the upload was left out, in words for the student."""

    source: str
    files: dict[str, int]
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line (and one per note) for the top of the student's results."""
        named = [f"{name} ({size:,} B)" for name, size in sorted(self.files.items())[:LISTED_FILES]]
        more = len(self.files) - len(named)
        listed = ", ".join(named) + (f" and {more} more" if more > 0 else "")
        count = f"{len(self.files)} file{'s' * (len(self.files) != 1)}"
        lines = [f"Graded {count} from {self.source} of your upload: {listed}."]
        return "\n".join(lines + [f"Not graded: {note}." for note in self.notes])

    def as_data(self) -> dict[str, object]:
        """The same for results.json's extra_data."""
        return {"from": self.source, "files": dict(sorted(self.files.items())), "not_graded": list(self.notes)}


def _candidates(entries: list[Entry]) -> tuple[list[Candidate], list[Candidate]]:
    """(package folders, folders of loose modules), each sorted shallowest first."""
    folders: dict[PurePosixPath, list[Entry]] = defaultdict(list)
    for entry in entries:
        folders[entry.path.parent].append(entry)
    roots, loose_roots = [], []
    for folder, inside in folders.items():
        names = {entry.path.name for entry in inside}
        if len(folder.parts) > MAX_PACKAGE_DEPTH or OTHER_FOLDERS & set(folder.parts):
            continue
        if folder.name == PACKAGE and names & (MODULE_FILES | {"__init__.py"}):
            roots.append(folder)
        elif names & MODULE_FILES:
            loose_roots.append(folder)
    order = lambda c: (len(c.root.parts), str(c.root))  # noqa: E731
    packages = [Candidate(root, tuple((e.path.relative_to(root), e) for e in entries if root in e.path.parents),
                          named=True) for root in roots]
    packages += [Candidate(e.path, (), named=True, linked=True) for e in entries
                 if e.link == SYMBOLIC_LINK and e.path.name == PACKAGE and len(e.path.parts) <= MAX_PACKAGE_DEPTH]
    loose = [Candidate(root, tuple((PurePosixPath(e.path.name), e) for e in folders[root] if e.path.suffix == ".py"),
                       named=False)
             for root in loose_roots if not any(p.root == root or p.root in root.parents for p in packages)]
    return sorted(packages, key=order), sorted(loose, key=order)


def _fingerprint(candidate: Candidate) -> tuple:
    """What a candidate holds: its files' paths and contents (links by their kind alone)."""
    _within_limits(candidate)
    return tuple(sorted((str(path), entry.link or hashlib.sha256(entry.read()).hexdigest())
                        for path, entry in candidate.files))


def _one_of(candidates: list[Candidate], what: str) -> tuple[Candidate, list[str]]:
    """The candidate to grade, with notes on identical copies; SubmissionError when they differ."""
    chosen, others = candidates[0], candidates[1:]
    if len(candidates) > MAX_CANDIDATES:
        first = ", ".join(c.where for c in candidates[:4])
        raise SubmissionError(f"your upload holds {len(candidates)} {what} ({first}, ...), so which one to grade "
                              f"is not clear. {HOW_TO_UPLOAD}")
    held = dict(_fingerprint(chosen)) if others else {}
    for other in others:
        theirs = dict(_fingerprint(other))
        if theirs != held:
            differ = sorted(name for name in held.keys() | theirs.keys() if held.get(name) != theirs.get(name))
            shown = ", ".join(differ[:6]) + (", ..." if len(differ) > 6 else "")
            places = ", ".join(c.where for c in candidates)
            pair = "they" if len(candidates) == 2 else f"{chosen.where} and {other.where}"
            raise SubmissionError(f"your upload holds {len(candidates)} different {what}: {places} ({pair} differ "
                                  f"in {shown}), so which one to grade is not clear. {HOW_TO_UPLOAD}")
    return chosen, [f"{c.where} holds the same files as {chosen.where} (graded once)" for c in others]


def _top_level(listing: Listing) -> str:
    """What the upload holds at its top, a zip there by what it holds at its own top ("work.zip/work/")."""
    inside: dict[str, set[str]] = defaultdict(set)
    for entry in listing.entries:
        parts = entry.path.parts
        if parts[0].lower().endswith(".zip"):
            inside[parts[0]].add(f"{parts[0]}/{parts[1]}" + "/" * (len(parts) > 2))
    names = sorted(name for top in (listing.top or sorted(inside)) for name in (inside.get(top) or {top}))
    if not names:
        return "it is empty"
    return f"found: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''}"


def _nothing_found(listing: Listing) -> SubmissionError:
    modules = ", ".join(sorted(MODULE_FILES))
    said = [f"the submission holds no {PACKAGE}/ folder and none of the assignment's modules ({modules}); "
            f"{_top_level(listing)}."]
    said += [f"{why[:1].upper()}{why[1:]}." for why in listing.unread]
    archives = sorted({e.path.name for e in listing.entries if e.path.name.lower().endswith(ARCHIVES_NOT_READ)})
    if archives:
        said.append(f"The grader reads zip files only: {', '.join(archives)} is not one.")
    return SubmissionError(" ".join([*said, HOW_TO_UPLOAD]))


def find_package(listing: Listing) -> tuple[Candidate, list[str]]:
    """The candidate to grade in an upload and notes on what was left out.

    A `cs336_basics/` at the top of the upload (where make_submission.sh's zip puts it) is the package;
    copies deeper down are named, not graded. Elsewhere, package folders come before loose modules, and
    two of the same kind must hold the same files.

    Raises:
        SubmissionError: nothing to grade, or two candidates that differ; the message says what was found.
    """
    packages, loose = _candidates(listing.entries)
    top = [p for p in packages if len(p.root.parts) == listing.top_depth]
    if top:
        chosen, notes = _one_of(top, f"{PACKAGE}/ folders")
        deeper = [p.where for p in packages if p not in top]
        if deeper:
            shown = ", ".join(deeper[:5]) + (f" and {len(deeper) - 5} more" if len(deeper) > 5 else "")
            notes.append(f"{shown}: {'another copy' if len(deeper) == 1 else 'other copies'} of {PACKAGE}/ deeper in "
                         f"the upload than the one at its top, which was graded")
    elif packages:
        chosen, notes = _one_of(packages, f"{PACKAGE}/ folders")
    elif loose:
        return _one_of(loose, "sets of the assignment's modules")
    else:
        raise _nothing_found(listing)
    for stray in loose:
        modules = ", ".join(str(path) for path, _ in stray.files if str(path) in MODULE_FILES)
        notes.append(f"{modules} at {stray.where}, a loose copy outside the {PACKAGE}/ folder that was graded")
    return chosen, notes


def _within_limits(candidate: Candidate) -> None:
    if candidate.linked:
        raise SubmissionError(f"{candidate.where} is a symbolic link; submit the folder itself")
    for kind, word in ((SYMBOLIC_LINK, "symbolic links"), (HARD_LINK, "hard links")):
        linked = [str(path) for path, entry in candidate.files if entry.link == kind]
        if linked:
            raise SubmissionError(f"{word} are not accepted: {', '.join(linked)} in {candidate.where}; "
                                  f"upload the files themselves")
    if len(candidate.files) > MAX_FILES or sum(e.size for _, e in candidate.files) > MAX_TOTAL_BYTES:
        raise SubmissionError(f"{candidate.where} is too large (limit {MAX_FILES} files, "
                              f"{MAX_TOTAL_BYTES // 2**20} MiB)")


def _write(candidate: Candidate, dest: Path) -> dict[str, int]:
    """Write the candidate's files under `dest`; path in the package -> bytes written."""
    _within_limits(candidate)
    written: dict[str, int] = {}
    for path, entry in candidate.files:
        data = entry.read(MAX_TOTAL_BYTES - sum(written.values()))
        target = dest.joinpath(*path.parts)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as error:
            raise SubmissionError(f"could not lay out {path} of {candidate.where}: {error.strerror}") from error
        written[str(path)] = len(data)
    return written


def lay_package(submission: Path, dest: Path) -> Intake:
    """Copy the package found in `submission` (a folder or a zip, see the module's docstring) into
    `dest` (which must not exist yet); what was graded, for the student.

    Raises:
        SubmissionError: the submission is unusable; the message says why and how to upload.
    """
    dest.mkdir(parents=True)
    try:
        with opened(submission) as listing:
            chosen, notes = find_package(listing)
            files = _write(chosen, dest)
    except UploadError as error:
        raise SubmissionError(str(error)) from error
    folders = [p.relative_to(dest).as_posix() for p in dest.rglob("*.py") if p.is_dir()]
    if folders:
        raise SubmissionError(f"{PACKAGE}/{folders[0]} is a folder; a name ending in .py must be a Python file")
    if not any(p.is_file() for p in dest.rglob("*.py")):
        raise SubmissionError(f"the {PACKAGE}/ at {chosen.where} holds no Python files")
    # Without __init__.py the package would be a namespace package, which a regular package of the
    # same name elsewhere on sys.path would shadow; an empty one is what the student meant.
    (dest / "__init__.py").touch(exist_ok=True)
    return Intake(chosen.where, files, tuple(notes))

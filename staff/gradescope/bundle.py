"""`staff bundle OUT.zip`: the Gradescope autograder, built from this tree and checked before it is written.

The zip holds setup.sh and run_autograder at its top (Gradescope's contract; setup.sh with the
exact Python and uv versions of `staff.gradescope.pins` written in), the locked environment's pyproject.toml
and uv.lock, the public suite and adapters, and of `staff/` only what
grading needs: the grader, the sandbox, the hidden suite and the list of the tests it grades
(`staff.grading.collected`). It holds no reference solution: no
`cs336_basics/` at all (the submission brings its own), and no line of a solution body anywhere.
"""

from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path

from staff.atomic import atomic_file
from staff.gradescope.autograder import DEADLINE_S, SETTINGS_FILE
from staff.gradescope.pins import python_pin, uv_pin
from staff.grading import provenance
from staff.grading.collected import COLLECTED_FILE, dumps
from staff.release.leaks import PUBLIC_CODE, squeeze
from staff.release.proc import ReleaseError
from staff.sandbox.settings import Settings
from staff.sources.markers import find_blocks
from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES

FILES = Path(__file__).resolve().parent / "autograder_files"
TOP_FILES = {"setup.sh": FILES / "setup.sh", "run_autograder": FILES / "run_autograder"}
# What the autograder imports (staff.gradescope.autograder and everything it reaches) and the suites it runs.
TREE = ["pyproject.toml", "uv.lock", "adapters", "tests", "staff/__init__.py", "staff/atomic.py", "staff/errors.py",
        "staff/gradescope/__init__.py", "staff/gradescope/autograder.py", "staff/grading", "staff/intake",
        "staff/sources/__init__.py", "staff/sources/problem_files.py", "staff/sandbox", "staff/hidden"]
SETTINGS_IN_BUNDLE = f"staff/{SETTINGS_FILE.name}"  # read by staff/gradescope/autograder.py
EXECUTABLE = {"setup.sh", "run_autograder"}
ZIP_TIME = (2025, 1, 1, 0, 0, 0)


def planned_files(source: Path) -> dict[str, Path]:
    """Bundle path -> source file, for every file the bundle holds."""
    files = dict(TOP_FILES)
    for part in TREE:
        path = source / part
        if path.is_file():
            files[part] = path
        elif path.is_dir():
            for child in sorted(path.rglob("*")):
                relative = child.relative_to(source)
                if child.is_file() and "__pycache__" not in relative.parts and child.suffix != ".pyc":
                    files[relative.as_posix()] = child
        else:
            raise ReleaseError(f"{path} is missing; the autograder needs it")
    return files


def solution_bodies(source: Path) -> dict[str, set[str]]:
    """The telling lines (whitespace removed) of each solution body, by "module:line", leaving out
    lines the shipped code holds anyway; bodies of fewer than three such lines are too short to tell."""
    public = [line for folder in PUBLIC_CODE for path in (source / folder).rglob("*.py")
              for line in path.read_text(encoding="utf-8").splitlines()]
    shipped = {squeeze(line) for line in public}
    bodies = {}
    for module in sorted((source / "cs336_basics").glob("*.py")):
        lines = module.read_text(encoding="utf-8").splitlines()
        for block in find_blocks("\n".join(lines), module.name):
            body = {squeeze(line) for line in lines[block.begin + 1 : block.end]}
            body = {line for line in body if len(line) >= 10 and line not in shipped}
            if len(body) >= 3:
                bodies[f"{module.name}:{block.begin + 1} ({block.qualname})"] = body
    return bodies


def check(source: Path, files: dict[str, Path]) -> list[str]:
    """What is wrong with a planned bundle: the package, or a file holding most of a solution body."""
    problems = [f"{name}: the bundle must hold no {name.split('/')[0]}/" for name in files
                if name.split("/")[0] == "cs336_basics"]
    bodies = solution_bodies(source)
    for name, path in files.items():
        try:
            lines = {squeeze(line) for line in path.read_text(encoding="utf-8").splitlines()}
        except UnicodeDecodeError:
            continue
        for where, body in bodies.items():
            if len(body & lines) >= 0.75 * len(body):
                problems.append(f"{name}: holds the solution body at cs336_basics/{where}")
    return problems


def graded_test_list(source: Path, hidden_visibility: str) -> str:
    """The tests the bundle's grade runs (public and hidden, no `cuda` test), collected now and keyed
    by what they depend on, so that an unusable upload scores 0 without a collection (`staff.grading.collected`)."""
    from staff.grading.selection import collect_only, listing_key

    tests = collect_only(source, hidden=True, gpu=False, hidden_visibility=hidden_visibility)
    return dumps(tests, listing_key(source, True, None, False, hidden_visibility))


def recorded_provenance(source: Path, allow_uncommitted: bool) -> dict:
    """What the bundle records of its own source (staff/provenance.json in it: `staff.grading.provenance`
    reads it where there is no git checkout): the grader's version, commit and whether the files the
    bundle is built from were committed, and the suite it grades with.

    Raises:
        ReleaseError: `source` is not a git checkout, or the bundle's files have uncommitted changes,
            and `allow_uncommitted` is false.
    """
    sources = [*TREE, "staff/gradescope/autograder_files", ".python-version"]
    changes = provenance.uncommitted(source, sources)
    if changes is None and not allow_uncommitted:
        raise ReleaseError(f"{source} is not a git checkout, so no grade could say which commit graded it; "
                           "build the bundle from a clone, or pass --allow-uncommitted (every grade then says so)")
    if changes and not allow_uncommitted:
        raise ReleaseError("the bundle's files have uncommitted changes, so its grades could not say what graded "
                           "them:\n  " + "\n  ".join(changes[:20]) + "\ncommit them (and add a CHANGELOG entry for a "
                           "changed test), or pass --allow-uncommitted (every grade then says so)")
    grader = provenance.grader(source)
    grader.pop("from", None)
    return {"grader": {**grader, "clean": changes == [], "uncommitted": changes or []},
            "suite": provenance.suite(True, source)}


def build_bundle(out: Path, source: Path, force: bool = False, hidden_visibility: str = HIDDEN_VISIBILITY,
                 deadline_s: float = DEADLINE_S, allow_uncommitted: bool = False) -> str:
    """Write the autograder zip to `out` (atomically, after the checks); a one-line summary.

    Raises:
        ReleaseError: `out` exists (without `force`) or is not a .zip, a check failed, or the tree has
            uncommitted changes to the bundle's files (without `allow_uncommitted`).
    """
    if out.suffix != ".zip":
        raise ReleaseError(f"{out}: the autograder is a .zip file; give a name ending in .zip")
    if out.exists() and not force:
        raise ReleaseError(f"{out} exists; pass --force to replace it")
    if hidden_visibility not in VISIBILITIES:
        raise ReleaseError(f"hidden visibility {hidden_visibility!r} is not one of {VISIBILITIES}")
    recorded = recorded_provenance(source, allow_uncommitted)
    python, uv = python_pin(source), uv_pin()
    # The pins are install steps of setup.sh (shell, before any Python); the grade's settings are a file.
    pins = {b"@PYTHON_VERSION@": python.encode(), b"@UV_VERSION@": uv.encode()}
    grade_settings = Settings(run_timeout_s=deadline_s, hidden_visibility=hidden_visibility)
    files = planned_files(source)
    problems = check(source, files)
    if problems:
        raise ReleaseError("the bundle would not be safe to upload:\n  " + "\n  ".join(problems[:40]))
    generated = {COLLECTED_FILE: graded_test_list(source, hidden_visibility).encode(),
                 SETTINGS_IN_BUNDLE: grade_settings.to_json().encode(),
                 provenance.RECORDED: (json.dumps(recorded, indent=1, sort_keys=True) + "\n").encode()}
    with atomic_file(out, "wb") as stream, zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        contents = {name: path.read_bytes() for name, path in files.items()} | generated
        for name, data in sorted(contents.items()):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            mode = 0o755 if name in EXECUTABLE else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            for placeholder, value in pins.items() if name in EXECUTABLE else ():
                data = data.replace(placeholder, value)
            zf.writestr(info, data)
    state = "committed" if recorded["grader"]["clean"] else "WITH UNCOMMITTED CHANGES (every grade says so)"
    return (f"autograder written to {out}: {len(contents)} files, {out.stat().st_size / 1024:.0f} KiB; "
            f"setup.sh installs Python {python} with uv {uv}; suite {provenance.suite_label(recorded['suite'])}, "
            f"commit {str(recorded['grader']['commit'])[:10]}, {state}")


def unpack(bundle: Path, dest: Path) -> None:
    """Unpack the bundle into `dest` the way Gradescope does, keeping the executable bits."""
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():
            target = dest / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777 or 0o644)

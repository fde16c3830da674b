"""`staff bundle OUT.zip`: the Gradescope autograder, built from this tree and checked before it is written.

The zip holds setup.sh and run_autograder at its top (Gradescope's contract; setup.sh with the
exact Python and uv versions of `staff.pins` written in), the locked environment's pyproject.toml
and uv.lock, the public suite and adapters, and of `staff/` only what
grading needs: the grader, the sandbox, the hidden suite and the list of the tests it grades
(`staff.collected`). It holds no reference solution: no
`cs336_basics/` at all (the submission brings its own), and no line of a solution body anywhere.
"""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

from staff.atomic import atomic_file
from staff.autograder import DEADLINE_S, SETTINGS_FILE
from staff.collected import COLLECTED_FILE, dumps
from staff.markers import find_blocks
from staff.pins import python_pin, uv_pin
from staff.release.leaks import PUBLIC_CODE, squeeze
from staff.release.proc import ReleaseError
from staff.sandbox.settings import Settings
from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES

FILES = Path(__file__).resolve().parent / "autograder_files"
TOP_FILES = {"setup.sh": FILES / "setup.sh", "run_autograder": FILES / "run_autograder"}
TREE = ["pyproject.toml", "uv.lock", "adapters", "tests", "staff/__init__.py", "staff/atomic.py",
        "staff/autograder.py", "staff/collected.py", "staff/grade.py", "staff/gradescope.py", "staff/outcomes.py",
        "staff/problem_files.py", "staff/scrub.py", "staff/selection.py", "staff/submission.py", "staff/suite_run.py",
        "staff/upload.py", "staff/sandbox", "staff/hidden"]
SETTINGS_IN_BUNDLE = f"staff/{SETTINGS_FILE.name}"  # beside staff/autograder.py, which reads it
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
    by what they depend on, so that an unusable upload scores 0 without a collection (`staff.collected`)."""
    from staff.selection import collect_only, listing_key

    tests = collect_only(source, hidden=True, gpu=False, hidden_visibility=hidden_visibility)
    return dumps(tests, listing_key(source, True, None, False, hidden_visibility))


def build_bundle(out: Path, source: Path, force: bool = False, hidden_visibility: str = HIDDEN_VISIBILITY,
                 deadline_s: float = DEADLINE_S) -> str:
    """Write the autograder zip to `out` (atomically, after the checks); a one-line summary.

    Raises:
        ReleaseError: `out` exists (without `force`) or is not a .zip, or a check failed.
    """
    if out.suffix != ".zip":
        raise ReleaseError(f"{out}: the autograder is a .zip file; give a name ending in .zip")
    if out.exists() and not force:
        raise ReleaseError(f"{out} exists; pass --force to replace it")
    if hidden_visibility not in VISIBILITIES:
        raise ReleaseError(f"hidden visibility {hidden_visibility!r} is not one of {VISIBILITIES}")
    python, uv = python_pin(source), uv_pin()
    # The pins are install steps of setup.sh (shell, before any Python); the grade's settings are a file.
    pins = {b"@PYTHON_VERSION@": python.encode(), b"@UV_VERSION@": uv.encode()}
    grade_settings = Settings(run_timeout_s=deadline_s, hidden_visibility=hidden_visibility)
    files = planned_files(source)
    problems = check(source, files)
    if problems:
        raise ReleaseError("the bundle would not be safe to upload:\n  " + "\n  ".join(problems[:40]))
    generated = {COLLECTED_FILE: graded_test_list(source, hidden_visibility).encode(),
                 SETTINGS_IN_BUNDLE: grade_settings.to_json().encode()}
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
    return (f"autograder written to {out}: {len(contents)} files, {out.stat().st_size / 1024:.0f} KiB; "
            f"setup.sh installs Python {python} with uv {uv}")


def unpack(bundle: Path, dest: Path) -> None:
    """Unpack the bundle into `dest` the way Gradescope does, keeping the executable bits."""
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():
            target = dest / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777 or 0o644)

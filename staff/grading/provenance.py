"""What graded a grade: the suite, the grader, the submission, the settings, the machine and the time.

Every results.json carries this as `extra_data.provenance` (a grade, a batch's, the Gradescope
bundle's), so a grade explains itself and a rerun can tell a stale grade from a current one:

- `suite`: the release version and a content hash of what decides points: every file of the public
  tests and adapters, the hidden suite when it graded, and pytest's settings in pyproject.toml (the
  points are markers in the test files). `files` holds each file's own hash, so a change names its
  files ("the suite changed in tests/test_09_data.py").
- `grader`: its version, git commit and whether its tree was clean (in the bundle, as `staff bundle`
  recorded them in `staff/provenance.json`, since the bundle is no git checkout).
- `submission`: a hash of the graded files as the intake laid them out (`of`: "package"), or of the
  upload's own bytes where no package could be taken from it (`of`: "upload").
- `settings`: every field of `Settings` (problems, gpu, limits, protections) as the grade used them.
- `machine`: the CPU's model and, where the NVIDIA driver is loaded, the GPU's name; Python's version.
- `time`: when the grade was made, UTC, ISO 8601.

Each graded test's entry carries `extra_data.test_sha256`, a hash of its own source (the test
function, decorators included), so `staff diff` can say which tests changed.

Hashes are sha256 in hex. Nothing here imports torch: the grader's own process never needs it.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import platform
import subprocess
import tomllib
from dataclasses import asdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITE_FOLDERS = ("tests", "adapters")  # what decides points besides the hidden suite
HIDDEN_FOLDER = "staff/hidden"
PYTEST_SETTINGS = "pyproject.toml[tool.pytest]"  # the pseudo-file of pytest's settings in the suite's hash
RECORDED = "staff/provenance.json"  # the grader's own provenance, written into the bundle by `staff bundle`


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_sha256(files: dict[str, str]) -> str:
    """One hash of a {relative path: file hash} map: its names and hashes, in sorted order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\n".encode())
    return digest.hexdigest()


def _files_under(root: Path, folder: str) -> dict[str, str]:
    """{path relative to `root`: sha256} of every file under `root`/`folder`, compiled files left out."""
    found = {}
    for path in sorted((root / folder).rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and "__pycache__" not in relative.parts and path.suffix != ".pyc":
            found[relative.as_posix()] = file_sha256(path)
    return found


def _pytest_settings_sha256(root: Path) -> str:
    """The hash of pyproject.toml's [tool.pytest] table (markers, timeout, options), as canonical JSON:
    the version and the dependencies change nothing a test decides."""
    table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
    return hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()


def version(root: Path = REPO_ROOT) -> str:
    """The release version pyproject.toml states."""
    return str(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def suite(hidden: bool, root: Path = REPO_ROOT) -> dict:
    """The suite a grade with (`hidden`) or without the hidden tests runs from `root`: version, sha256,
    whether the hidden suite is in it, and each file's hash (read anew each time: a few milliseconds)."""
    files = {}
    for folder in (*SUITE_FOLDERS, *([HIDDEN_FOLDER] if hidden else [])):
        files.update(_files_under(root, folder))
    files[PYTEST_SETTINGS] = _pytest_settings_sha256(root)
    return {"version": version(root), "sha256": tree_sha256(files), "hidden": hidden, "files": files}


def changed_files(old: dict, new: dict) -> list[str]:
    """The files whose hash differs between two suites' `files` maps (added and removed included)."""
    old_files, new_files = old.get("files", {}), new.get("files", {})
    return sorted(name for name in set(old_files) | set(new_files) if old_files.get(name) != new_files.get(name))


def git_output(root: Path, *args: str) -> str | None:
    """What `git -C root ARGS` prints, or None where git cannot run or fails (not a checkout)."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def uncommitted(root: Path = REPO_ROOT, paths: list[str] | None = None) -> list[str] | None:
    """What `git status` shows as changed or untracked in `root`'s checkout (paths, at most 50), under
    `paths` only where given; None when `root` is not a git checkout or git cannot be run."""
    status = git_output(root, "status", "--porcelain", "--untracked-files=normal", "--", *(paths or []))
    if status is None or git_output(root, "rev-parse", "--show-toplevel") is None:
        return None
    return [line[3:] for line in status.splitlines() if line.strip()][:50]


def grader(root: Path = REPO_ROOT) -> dict:
    """The grader: version, commit (None outside a checkout), whether the tree was clean (None: unknown)
    and where that was read (`from`: "checkout", or "bundle" where `staff bundle` recorded it)."""
    recorded = root / RECORDED
    if recorded.is_file():  # the bundle: what `staff bundle` saw in the checkout it was built from
        try:
            return {**json.loads(recorded.read_text(encoding="utf-8"))["grader"], "from": "bundle"}
        except (OSError, ValueError, KeyError):
            pass
    commit = git_output(root, "rev-parse", "HEAD")
    changes = uncommitted(root)
    return {"version": version(root), "commit": commit.strip() if commit else None,
            "clean": None if changes is None else not changes, "from": "checkout"}


def folder_sha256(folder: Path) -> str:
    """A hash of every file under `folder`: relative names and bytes (as the intake laid them out)."""
    return tree_sha256({p.relative_to(folder).as_posix(): file_sha256(p)
                        for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts})


def upload_sha256(upload: Path) -> str:
    """A hash of an upload as it is (a file's bytes, or a folder's files), for one no package came from."""
    return file_sha256(upload) if upload.is_file() else folder_sha256(upload) if upload.is_dir() else ""


def submission_of(upload: Path, package: Path | None) -> dict:
    """The `submission` field: the laid-out package's hash, or the upload's where none was taken."""
    if package is not None:
        return {"of": "package", "sha256": folder_sha256(package)}
    return {"of": "upload", "sha256": upload_sha256(upload)}


def submission_sha256(upload: Path) -> dict:
    """The `submission` field a grade of `upload` would record, without grading it: the intake lays
    the package out in a scratch folder (as a grade does) and it is hashed there."""
    from staff.intake.submission import SubmissionError, lay_package
    from staff.sandbox.removal import scratch_folder

    with scratch_folder("staff-intake-") as scratch:
        try:
            lay_package(upload, scratch / "package")
        except SubmissionError:
            return submission_of(upload, None)
        return submission_of(upload, scratch / "package")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_name() -> str | None:
    """The first GPU the NVIDIA driver lists (from /proc, without starting CUDA), or None."""
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Model:"):
                    return line.split(":", 1)[1].strip()
        except OSError:
            continue
    return None


def machine() -> dict:
    return {"cpu": _cpu_model(), "gpu": _gpu_name(), "python": platform.python_version()}


def settings_record(settings) -> dict:
    """A `Settings` as plain JSON data (problems as a list or None)."""
    record = asdict(settings)
    record["problems"] = None if settings.problems is None else list(settings.problems)
    return record


def provenance(settings, hidden: bool, submission: dict, root: Path = REPO_ROOT) -> dict:
    """The whole `extra_data.provenance` of a grade made now with `settings` (`hidden`: whether the
    hidden suite ran) of the submission whose `submission_of` record is `submission`."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return {"suite": suite(hidden, root), "grader": grader(root), "submission": submission,
            "settings": settings_record(settings), "machine": machine(), "time": now.isoformat()}


def suite_label(record: dict) -> str:
    """A suite in a few characters, for a gradebook cell or a line: "1.7.0 (3f2a9c1b0d4e)"."""
    return f"{record.get('version', '?')} ({str(record.get('sha256', ''))[:12]})"


def suite_line(record: dict) -> str:
    """The line a grade's summary ends with: which tests graded it (and, from a bundle built from
    uncommitted changes, that it was). It holds no time, so the same grade reads the same."""
    line = f"Graded with the tests of release {suite_label(record['suite'])}."
    grader = record.get("grader", {})
    if grader.get("from") == "bundle" and grader.get("clean") is False:
        line += " The autograder was built from uncommitted changes to its source."
    return line


def source_hashes(root: Path, nodeids: list[str]) -> dict[str, str]:
    """{nodeid: sha256 of its test function's source} for the tests of `root`'s files; a test whose
    function cannot be found (a file that does not parse) is left out. Parameters share their function's."""
    functions: dict[str, dict[str, str]] = {}
    found = {}
    for nodeid in nodeids:
        path, _, name = nodeid.partition("::")
        name = name.split("[", 1)[0].split("::")[-1]
        if path not in functions:
            functions[path] = {}
            try:
                source = (root / path).read_text(encoding="utf-8")
                for node in ast.walk(ast.parse(source)):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                        lines = source.splitlines()[first - 1 : node.end_lineno]
                        functions[path][node.name] = hashlib.sha256("\n".join(lines).encode()).hexdigest()
            except (OSError, SyntaxError, ValueError):
                pass
        if name in functions[path]:
            found[nodeid] = functions[path][name]
    return found

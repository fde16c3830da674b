"""The red team: hostile submissions, each with the grade it must get, built from the cases folder.

Each case is a folder under `cases/` with a `case.toml`:

    description   what the submission tries
    honest        the problems whose modules are the reference's (a list, or "all"); the rest are stubs
    graded        the problems its grade runs (`--problems`; a list, default "all"): every honest problem
                  and every problem an `attack_in` function belongs to. An attack made at import needs
                  no more than a few honest problems to show that the grade goes on unharmed, and each
                  problem graded costs time in every test run
    lose          the honest problems the attack may cost points (it must cost some, unless `review`);
                  every other honest problem must keep all its points, and every problem not honest must
                  score 0 (one not graded scores 0 of 0)
    review        the grade must be marked for a person's review (`staff.intake.review_marks`): code
                  that reaches an instrument inside the worker is contained by the mark, so its `lose`
                  problems may keep their points where the grade is marked
    message       text the results must contain (the clear message the attack ends in)
    no_leak       the results may not contain a line of the hidden tests
    survivors     no process whose command line starts with this may be left after grading
    marker        this file must not exist after grading (a payload that ran outside the worker)
    requires      a sandbox protection the case needs to be graded safely; skipped without it
    upload        how the upload is built: "folder" (default), or a builder named in UPLOADS
    without       lists of protections to turn off ("landlock", "namespaces", "seccomp", "tmpfs", "separate_user"), or
                  ["gpu-confinement"]: confined as a GPU grade's worker is (`--gpu-confinement`); the
                  case is graded once per list, as NAME-without-A-and-B (NAME-as-a-gpu-grade), to show
                  that what remains holds alone (an empty list: with every protection on)
    hidden_visibility   grade it with this visibility of the hidden tests (default: the grader's)
    memory_gib    grade it with this memory setting (`--memory-gib`; default: the grader's)
    outcomes      how its grade may end (results.json's extra_data "outcome"; default: any): a case that
                  must not turn its grade into "not graded" lists the others
    memory_budget_mib   the test process may peak at most this many MiB above the reference's
    run_timeout_s       grade it with this limit on the whole run (default: the grader's)

    attack_in     functions ("module.function", "module.Class.method", or "*" for every one) that
                  call `attack(locals())` from the case's `cs336_basics/_attack.py` before their own body
    returns       those functions return what attack returns instead of running their body

and files to lay over the base: `cs336_basics/*.py` replace or add modules (the `_attack.py` above).
A case that looks for what the red team plants names it with the placeholders of
`staff.redteam.plantnames` (`{planted_token}`, `{planted_key}`), filled with the run's names in the
built copy.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import struct
import tomllib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from staff import samples
from staff.redteam.plantnames import PlantedNames, stale, uses_placeholders
from staff.sources.markers import find_blocks, stub_source
from tests.problems import PROBLEMS

CASES = Path(__file__).resolve().parent / "cases"
MODULES = {number: problem.module for number, problem in PROBLEMS.items()}


@dataclass(frozen=True)
class Case:
    name: str
    description: str
    honest: tuple[int, ...] = ()
    graded: tuple[int, ...] = tuple(MODULES)
    lose: tuple[int, ...] = ()
    message: str | None = None
    no_leak: bool = False
    survivors: str | None = None
    marker: str | None = None
    requires: str | None = None
    upload: str = "folder"
    attack_in: tuple[str, ...] = ()
    returns: bool = False
    off: tuple[str, ...] = ()
    hidden_visibility: str | None = None
    memory_budget_mib: int | None = None
    memory_gib: float | None = None
    outcomes: tuple[str, ...] = ()
    run_timeout_s: float | None = None
    review: bool = False
    folder: Path = field(default=Path(), compare=False)


# What a case may turn off (Settings switches), and "gpu-confinement": the forms of the protections a GPU grade's
# worker has for CUDA's sake (Landlock set by each child, its own /proc writable; a zygote whose filter allows
# unix sockets and memfd until each child narrows it), graded on the CPU (--gpu-confinement).
PROTECTIONS = ("landlock", "namespaces", "seccomp", "tmpfs", "separate_user", "gpu-confinement")
GPU_CONFINED = "gpu-confinement"


def variant_name(name: str, off: tuple[str, ...] | list[str]) -> str:
    """The name of case `name` graded with the protections `off` turned off."""
    if GPU_CONFINED in off:
        return f"{name}-as-a-gpu-grade"
    return "-without-".join([name, "-and-".join(off)]) if off else name


def settings_off(off: tuple[str, ...]) -> dict[str, bool]:
    """The Settings that turn off the protections `off` names."""
    chosen: dict[str, bool] = {name: False for name in off if name != GPU_CONFINED}
    if GPU_CONFINED in off:
        chosen["gpu_confinement"] = True
    if "namespaces" in off or "landlock" in off:
        chosen["allow_open_grader"] = True  # graded as an ordinary user, such a grade is refused unless allowed
    return chosen


def load_cases() -> list[Case]:
    """Every case of the corpus (one per `without` list), sorted by name.

    Raises:
        ValueError: a case.toml that is missing, unreadable or inconsistent, named.
    """
    cases = []
    for folder in sorted(p for p in CASES.iterdir() if p.is_dir()):
        try:
            spec = tomllib.loads((folder / "case.toml").read_text(encoding="utf-8"))
            for key in ("honest", "graded"):
                if spec.get(key, "all") == "all":
                    spec[key] = list(MODULES)
            without = spec.pop("without", [[]])
            if not all(isinstance(off, list) and set(off) <= set(PROTECTIONS) for off in without):
                raise TypeError(f"'without' must be lists of {PROTECTIONS}")
            if any(GPU_CONFINED in off and len(off) > 1 for off in without):
                raise TypeError(f"'{GPU_CONFINED}' is a confinement of its own: a list of it alone")
            variants = [Case(name=variant_name(folder.name, off),
                             folder=folder, off=tuple(off),
                             **{k: tuple(v) if k in ("honest", "graded", "lose", "attack_in", "outcomes") else v
                                for k, v in spec.items()})
                        for off in without]
        except (OSError, tomllib.TOMLDecodeError, TypeError) as error:
            raise ValueError(f"{folder / 'case.toml'}: {error}") from error
        case = variants[0]
        if not set(case.lose) <= set(case.honest) <= set(MODULES):
            raise ValueError(f"{folder / 'case.toml'}: 'honest' must be problems of {sorted(MODULES)} (or \"all\"), "
                             f"and 'lose' some of them")
        # "*" is in every function, so any problem graded runs it; a named module must be graded
        attacked = {number for number, module in MODULES.items()
                    if any(name.split(".")[0] == module for name in case.attack_in)}
        if not (set(case.honest) | attacked) <= set(case.graded) <= set(MODULES) or not case.graded:
            raise ValueError(f"{folder / 'case.toml'}: 'graded' must be problems of {sorted(MODULES)} (or \"all\") "
                             f"holding every honest problem and every problem its attack is in "
                             f"({sorted(set(case.honest) | attacked)})")
        if case.upload != "folder" and case.upload not in UPLOADS:
            raise ValueError(f"{folder / 'case.toml'}: unknown upload {case.upload!r}; known: {sorted(UPLOADS)}")
        cases.extend(variants)
    return cases


def _parameters(text: str) -> dict[str, list[str]]:
    """Each function's qualified name (`f`, `Class.method`) -> its parameters' names, in order."""
    found: dict[str, list[str]] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                spec = child.args
                names = [a.arg for a in [*spec.posonlyargs, *spec.args, *spec.kwonlyargs]]
                names += [a.arg for a in (spec.vararg, spec.kwarg) if a is not None]
                found[prefix + child.name] = names
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")

    walk(ast.parse(text), "")
    return found


def _with_attacks(text: str, module: str, case: Case) -> str:
    """The module's reference text with the case's attack call put before each chosen solution block:
    `attack({"name": name, ...})`, the function's parameters by name (not `locals()`, which the review
    marks would find in every case's code, whatever its attack)."""
    lines = text.splitlines(keepends=True)
    chosen = [b for b in find_blocks(text, module)
              if "*" in case.attack_in or f"{module}.{b.qualname}" in case.attack_in]
    parameters = _parameters(text) if chosen else {}
    for block in sorted(chosen, key=lambda b: b.begin, reverse=True):
        if block.qualname not in parameters:
            raise ValueError(f"{module}.{block.qualname}: no function of that name holds the block, so its "
                             f"parameters cannot be handed to the attack")
        arguments = "{" + ", ".join(f"{name!r}: {name}" for name in parameters[block.qualname]) + "}"
        call = f"return attack({arguments})" if case.returns else f"attack({arguments})"
        lines[block.begin:block.begin] = [f"{block.indent}from cs336_basics._attack import attack\n",
                                          f"{block.indent}{call}\n"]
    return "".join(lines)


def _package(case: Case, dest: Path, planted: PlantedNames | None) -> Path:
    """`dest`/cs336_basics: the case's base, with its attack calls put in and its files laid over (the
    planted names filled in)."""
    package = samples.reference(dest)
    honest = {MODULES[n] for n in case.honest}
    for path in package.glob("*.py"):
        text = _with_attacks(path.read_text(encoding="utf-8"), path.stem, case)
        path.write_text(text if path.stem in honest else stub_source(text, path), encoding="utf-8")
    overlay = case.folder / "cs336_basics"
    if overlay.is_dir():
        for path in overlay.rglob("*"):
            if path.is_file():
                target = package / path.relative_to(overlay)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                if path.suffix == ".py":
                    _fill(target, case, planted)
    return package


def _fill(target: Path, case: Case, planted: PlantedNames | None) -> None:
    """The built copy's planted-name placeholders filled with this run's names."""
    text = target.read_text(encoding="utf-8")
    if not uses_placeholders(text):
        return
    if planted is None:
        raise ValueError(f"case {case.name} looks for planted objects ({target.name}): build it with the run's "
                         f"PlantedNames, the ones planted_sources plants at")
    target.write_text(planted.substitute(text), encoding="utf-8")


def build(case: Case, dest: Path, planted: PlantedNames | None = None) -> Path:
    """Make the case's upload inside the empty folder `dest`; the path to grade (a folder or a zip).
    `planted`: the names this run plants at (needed by the cases that look for them)."""
    if case.upload == "folder":
        _package(case, dest / case.name, planted)
        return dest / case.name
    return UPLOADS[case.upload](case, dest)


def planted_problems(upload: Path, planted: PlantedNames) -> list[str]:
    """Where a built upload refers to planted objects that are not this run's (a stale literal or an
    unfilled placeholder would make its attack look elsewhere and "pass"); empty when none. Zips
    (built from the stubs, never from a case's files) are not read."""
    if not upload.is_dir():
        return []
    return [f"{path.relative_to(upload)}: {problem}" for path in sorted(upload.rglob("*.py"))
            for problem in stale(path.read_text(encoding="utf-8", errors="replace"), planted)]


# -- uploads that a folder of files cannot express --------------------------------------------------


def _symlink(case: Case, dest: Path) -> Path:
    package = samples.stubs(dest / case.name)
    (package / "strides.py").unlink()
    os.symlink(samples.REPO_ROOT / "cs336_basics" / "strides.py", package / "strides.py")
    return dest / case.name


def _hard_link(case: Case, dest: Path) -> Path:
    package = samples.stubs(dest / case.name)
    solved = samples.reference(dest / "elsewhere")  # a copy: linking the tree's own files would change them
    for module in ("strides.py", "flops.py"):
        (package / module).unlink()
        os.link(solved / module, package / module)
    return dest / case.name


def _zip_of_stubs(dest: Path, name: str, extra: dict[str, str]) -> Path:
    folder = dest / "unzipped"
    samples.stubs(folder)
    return samples.zip_folder(folder, dest / f"{name}.zip", extra=extra)


def _zip_slip(case: Case, dest: Path) -> Path:
    return _zip_of_stubs(dest, case.name, {"cs336_basics/../../escape.py": "print('out')",
                                           "/cs336_basics/abs.py": "print('abs')"})


def _zip_bomb(case: Case, dest: Path) -> Path:
    archive = _zip_of_stubs(dest, case.name, {})
    with zipfile.ZipFile(archive, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("cs336_basics/zeros.bin", "w", force_zip64=True) as entry:
            block = bytes(1 << 20)
            for _ in range(200):
                entry.write(block)
    return archive


def _zip_many_entries(case: Case, dest: Path) -> Path:
    archive = _zip_of_stubs(dest, case.name, {})
    with zipfile.ZipFile(archive, "a") as zf:
        for i in range(60_000):
            zf.writestr(f"junk/{i}.txt", "")
    return archive


def _patch_headers(archive: Path, change: Callable[[bytearray, int, bool], None]) -> None:
    """Apply `change(data, offset, central)` at every local file header and central directory entry."""
    data = bytearray(archive.read_bytes())
    for signature, central in ((b"PK\x03\x04", False), (b"PK\x01\x02", True)):
        at = data.find(signature)
        while at >= 0:
            change(data, at, central)
            at = data.find(signature, at + 4)
    archive.write_bytes(bytes(data))


def _zip_encrypted(case: Case, dest: Path) -> Path:
    archive = _zip_of_stubs(dest, case.name, {})

    def encrypt(data: bytearray, at: int, central: bool) -> None:
        flags = at + (8 if central else 6)
        data[flags : flags + 2] = struct.pack("<H", struct.unpack("<H", data[flags : flags + 2])[0] | 1)

    _patch_headers(archive, encrypt)
    return archive


def _zip_unknown_compression(case: Case, dest: Path) -> Path:
    archive = _zip_of_stubs(dest, case.name, {})

    def method(data: bytearray, at: int, central: bool) -> None:
        offset = at + (10 if central else 8)
        data[offset : offset + 2] = struct.pack("<H", 99)

    _patch_headers(archive, method)
    return archive


def _init_folder(case: Case, dest: Path) -> Path:
    folder = dest / "unzipped"
    package = samples.stubs(folder)
    (package / "__init__.py").unlink()
    (package / "__init__.py").mkdir()
    (package / "__init__.py" / "inner.py").write_text("x = 1\n")
    return samples.zip_folder(folder, dest / f"{case.name}.zip")


UPLOADS: dict[str, Callable[[Case, Path], Path]] = {
    "symlink": _symlink, "hard-link": _hard_link, "zip-slip": _zip_slip, "zip-bomb": _zip_bomb,
    "zip-many-entries": _zip_many_entries, "zip-encrypted": _zip_encrypted,
    "zip-unknown-compression": _zip_unknown_compression, "init-folder": _init_folder,
}


def judge(case: Case, results: dict) -> list[str]:
    """What is wrong with the results.json a case was graded to; empty when it got what it must."""
    earned: dict[int, float] = {n: 0.0 for n in MODULES}
    possible: dict[int, float] = {n: 0.0 for n in MODULES}
    for test in results.get("tests", []):
        problem = test.get("extra_data", {}).get("problem", 0)
        if problem in MODULES:
            earned[problem] += test["score"]
            possible[problem] += test["max_score"]
    problems = []
    marked = bool(results.get("extra_data", {}).get("review"))
    if case.review and not marked:
        problems.append("the grade is not marked for review, though the code reaches past the grader's checks")
    for number in MODULES:
        got = f"{earned[number]:g} / {possible[number]:g}"
        if number not in case.honest and earned[number] != 0:
            problems.append(f"problem {number}: {got}, expected 0 (no honest work there)")
        elif number in case.lose and not earned[number] < possible[number] and not (case.review and marked):
            problems.append(f"problem {number}: {got}, expected to lose points to the attack")
        elif number in case.honest and number not in case.lose and earned[number] != possible[number]:
            problems.append(f"problem {number}: {got}, expected full marks (the attack is elsewhere)")
    outcome = results.get("extra_data", {}).get("outcome")
    if case.outcomes and outcome not in case.outcomes:
        problems.append(f"the grade ended {outcome!r}, expected one of {list(case.outcomes)}")
    text = json.dumps(results)
    if case.message is not None and case.message not in text:
        problems.append(f"the results do not say {case.message!r}")
    return problems

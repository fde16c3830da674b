"""`staff release OUT`: build the student release in a scratch folder, check it, then move it into OUT.

Nothing lands in OUT (or OUT.zip) unless every check passed, so a failed build leaves no
half-made release behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from staff.release.contents import EXECUTABLE, SHIPPED_FOLDERS, STUB, Entry, plan, write_manifest, write_tree
from staff.release.proc import ReleaseError, clean_env, run, step, uv
from staff.release.selfcheck import grade_stubs, install, require, run_public_tests
from staff.release.verify import check_tree

ZIP_TIME = (2025, 1, 1, 0, 0, 0)  # fixed, so the same tree always zips to the same bytes
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Course staff", "GIT_AUTHOR_EMAIL": "course-staff@example.invalid"}
COMMIT_MESSAGE = "Assignment release: PyTorch and resource accounting"


def zip_path_for(out: Path) -> Path:
    """Where `--zip` writes: next to OUT, named after it."""
    return out.with_name(out.name + ".zip")


def check_destination(out: Path, source: Path, force: bool, make_zip: bool) -> None:
    """Refuse destinations that would clobber work: a non-empty OUT without --force, the staff
    tree or a folder holding it, an existing zip without --force."""
    out, source = out.resolve(), source.resolve()
    if out == source or out in source.parents:
        raise ReleaseError(f"{out} is or contains the staff tree; choose a new folder for the release")
    for folder in (*SHIPPED_FOLDERS, "staff"):
        if source / folder == out or source / folder in out.parents:
            raise ReleaseError(f"{out} is inside {source / folder}, which the release is built from")
    if out.exists() and not out.is_dir():
        raise ReleaseError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ReleaseError(f"{out} is not empty; choose an empty or new folder, or pass --force to replace it")
    archive = zip_path_for(out)
    if make_zip and archive.exists() and not force:
        raise ReleaseError(f"{archive} exists; pass --force to replace it")


def write_zip(tree: Path, archive: Path, entries: list[Entry]) -> None:
    """Zip the release's files under one top folder named after it (as a download from a course site)."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for entry in entries:
            info = zipfile.ZipInfo(f"{tree.name}/{entry.dest}", date_time=ZIP_TIME)
            info.external_attr = (0o100755 if entry.dest in EXECUTABLE else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (tree / entry.dest).read_bytes())
    with zipfile.ZipFile(archive) as zf:
        names = {name.split("/", 1)[1] for name in zf.namelist()}
    require(sorted(f"{d}: missing from the zip" for d in {e.dest for e in entries} - names), "zip")


def init_git(tree: Path, entries: list[Entry]) -> str:
    """Make `tree` a fresh git repository on branch main with one commit of exactly the release's
    files; returns the commit id. The committer's own git identity is used when one is set."""
    if shutil.which("git") is None:
        raise ReleaseError("--git needs git on PATH")
    env = clean_env()
    configured = subprocess.run(["git", "config", "user.email"], cwd=tree, env=env, capture_output=True, text=True)
    if not configured.stdout.strip():
        env.update(GIT_IDENTITY, GIT_COMMITTER_NAME=GIT_IDENTITY["GIT_AUTHOR_NAME"],
                   GIT_COMMITTER_EMAIL=GIT_IDENTITY["GIT_AUTHOR_EMAIL"])

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=tree, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ReleaseError(f"git {' '.join(args)} failed in {tree}:\n{done.stderr.strip()}")
        return done.stdout

    git("init", "--quiet", "--initial-branch=main")
    git("add", "--all")
    git("commit", "--quiet", "--no-verify", "-m", COMMIT_MESSAGE)
    tracked = set(git("ls-files", "-z").split("\0")) - {""}
    expected = {e.dest for e in entries}
    require([f"{p}: missing from the commit (ignored by .gitignore?)" for p in sorted(expected - tracked)]
            + [f"{p}: committed but not part of the release" for p in sorted(tracked - expected)], "git")
    return git("rev-parse", "--short", "HEAD").strip()


def _build_and_check(source: Path, tree: Path, check: Path) -> list[Entry]:
    with step("planning the release"):
        entries = plan(source)
        stubbed = sum(e.kind == STUB for e in entries)
    with step(f"writing {len(entries)} files, {stubbed} modules with their solutions stubbed"):
        write_tree(source, tree, entries)
    with step("re-locking for the student pyproject.toml (uv lock)"):
        run([uv(), "lock"], tree, what="uv lock in the release")
        write_manifest(tree, entries)
    with step("checking files, stubs, sizes and leaks"):
        require(check_tree(source, tree, entries), "static checks")
    shutil.copytree(tree, check)  # the checks install and run in a copy, so the release stays clean
    with step("installing the release fresh (uv sync --locked)"):
        install(check)
    with step("running the release's public tests (uv run pytest): every test must fail on a stub"):
        require(run_public_tests(check, source), "public tests in the release")
    with step("grading the release's stubs (staff grade): must give 0"):
        require(grade_stubs(check), "staff grade of the release")
    return entries


def build_release(out: Path, source: Path, *, make_zip: bool = False, make_git: bool = False,
                  force: bool = False) -> str:
    """Build, check and write the student release to `out`; a one-paragraph summary of what was made.

    Raises:
        ReleaseError: the destination is unusable or a check failed; `out` is left as it was.
    """
    out = out.resolve()
    check_destination(out, source, force, make_zip)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    except OSError as error:
        raise ReleaseError(f"cannot create a scratch folder next to {out}: {error}") from error
    try:
        tree = scratch / out.name
        entries = _build_and_check(source, tree, scratch / "check")
        size = sum((tree / e.dest).stat().st_size for e in entries)
        summary = [f"release written to {out}: {len(entries)} files, {size / 1024:.0f} KiB"]
        if make_git:
            with step("git: a fresh repository with one commit"):
                summary.append(f"git repository on branch main, commit {init_git(tree, entries)}")
        if make_zip:
            with step("writing the zip"):
                write_zip(tree, scratch / "release.zip", entries)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tree, out)
        if make_zip:
            archive = zip_path_for(out)
            os.replace(scratch / "release.zip", archive)
            summary.append(f"zip written to {archive} ({archive.stat().st_size / 1024:.0f} KiB)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return "; ".join(summary)

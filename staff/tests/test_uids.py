"""The worker's uid: inside the ids the container maps (scripted uid_map texts), never an account's, and
a clear fallback (no separate user, with the reason in the protections) where no free id is mapped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from staff.grading.grade import REPO_ROOT
from staff.sandbox import layout, uids
from staff.sandbox.layout import build
from staff.sandbox.settings import Settings
from staff.sandbox.uids import (
    FULL_MAP,
    SANDBOX_UID_BASE,
    SANDBOX_UID_COUNT,
    WorkerUids,
    choose_window,
    mapped_ranges,
)

REMAPPED = "         0     100000      65536\n"  # a userns-remapped Docker's usual map, as the kernel prints it
ACCOUNTS = frozenset({0, 1, 100, 1000, 1001, 40000, 65534})


def draws(window: WorkerUids, n: int = 2000) -> set[int]:
    return {window.pick() for _ in range(n)}


def test_the_map_is_read_line_by_line():
    assert mapped_ranges(REMAPPED) == [range(0, 65536)]
    assert mapped_ranges("0 1000 1\n1 100000 65536\n") == [range(0, 1), range(1, 65537)]
    with pytest.raises(ValueError, match="inside outside count"):
        mapped_ranges("0 100000\n")


def test_a_full_map_keeps_the_usual_high_uids():
    window = choose_window(FULL_MAP, FULL_MAP, ACCOUNTS)
    assert window.window == range(SANDBOX_UID_BASE, SANDBOX_UID_BASE + SANDBOX_UID_COUNT)
    picked = draws(window, 200)
    assert len(picked) > 190 and all(uid in window.window for uid in picked)  # random per grade


def test_a_remapped_container_gets_a_mapped_uid_that_no_account_uses():
    taken = ACCOUNTS | set(range(40000, 65000))  # a crowded upper half: the draw must step around it
    window = choose_window(REMAPPED, REMAPPED, frozenset(taken))
    assert window.reason is None
    picked = draws(window)
    assert all(uid < 65536 and uid not in taken and uid not in (0, 65534, 65535) for uid in picked)
    assert min(picked) >= 65536 // 2 and len(picked) > 100  # the upper half, still random


def test_the_gid_map_counts_too():
    # Every uid is mapped but only a remapped range of gids: the worker's gid is its uid.
    window = choose_window(FULL_MAP, REMAPPED, ACCOUNTS)
    assert all(uid < 65536 for uid in draws(window, 200))


def test_a_map_that_reaches_past_100000_is_used_above_it():
    window = choose_window("0 0 1\n1 500000 300000\n", "0 0 1\n1 500000 300000\n", ACCOUNTS)
    assert all(100_000 <= uid < 300_001 for uid in draws(window, 200))


@pytest.mark.parametrize("uid_map", ["0 100000 1\n", "0 100000 2000\n", ""])
def test_a_map_too_small_for_a_free_uid_gives_a_reason_not_a_uid(uid_map):
    window = choose_window(uid_map, uid_map, ACCOUNTS)
    assert window.pick() is None
    assert "too few user ids" in window.reason and "mapped:" in window.reason


def test_the_worker_uids_say_which_uids_workers_may_have():
    window = choose_window(REMAPPED, REMAPPED, ACCOUNTS)
    assert 50000 in window and 1000 not in window and 65534 not in window and 10**9 not in window


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root gives the worker a user of its own")


@needs_root
def test_the_layout_falls_back_to_no_separate_user_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(layout, "worker_uids", lambda: choose_window("0 100000 10\n", "0 100000 10\n", ACCOUNTS))
    workspace = _build(tmp_path)
    assert "too few user ids" in workspace.no_user
    assert '"uid": null' in workspace.settings.read_text() and workspace.worker.stat().st_uid == 0


@needs_root
def test_the_layout_falls_back_when_the_kernel_refuses_the_uid(tmp_path, monkeypatch):
    def refuse(path, uid, gid):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "chown", refuse)
    workspace = _build(tmp_path)
    assert "cannot give files to uid" in workspace.no_user and "Invalid argument" in workspace.no_user
    assert '"uid": null' in workspace.settings.read_text()


@needs_root
def test_the_layout_gives_the_worker_a_mapped_uid(tmp_path, monkeypatch):
    monkeypatch.setattr(uids, "_read_map", lambda path: REMAPPED)
    workspace = _build(tmp_path)
    assert workspace.no_user is None and 1000 <= workspace.worker.stat().st_uid < 65534


def _build(tmp_path: Path):
    package = tmp_path / "package"
    package.mkdir()
    (package / "__init__.py").touch()
    (tmp_path / "scratch").mkdir()
    return build(tmp_path / "scratch", REPO_ROOT, package, ("adapters",), False, Settings())


@pytest.mark.slow  # a sandboxed grade, end to end
@needs_root
def test_a_grade_without_a_mapped_uid_says_why_in_its_protections(tmp_path, monkeypatch):
    from staff import samples
    from staff.grading.grade import grade
    from staff.sandbox.settings import Settings

    monkeypatch.setattr(layout, "worker_uids", lambda: choose_window("0 100000 10\n", "0 100000 10\n", ACCOUNTS))
    result = grade(samples.reference(tmp_path / "submission"), Settings(hidden=False, problems={1}), progress=False)
    assert result.score == result.max_score > 0  # graded as usual, only without a user of its own
    assert result.protections["separate user"].startswith("off: the container maps too few user ids")

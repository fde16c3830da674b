"""The red team's planted objects carry a per-run token (staff/redteam/plantnames.py): two runs on one
machine plant side by side, a taken name is named, and every case that looks for planted objects
is built to look exactly where this run planted them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import sys

import pytest

from staff.redteam.corpus import CASES, build, load_cases, planted_problems
from staff.redteam.planted import IPC_CREAT, IPC_EXCL, IPC_RMID, PlantingError, planted_sources
from staff.redteam.plantnames import PlantedNames, new_names, stale, uses_placeholders

LOOKERS = {"connect-to-a-socket-file", "keys-carry-sources", "read-planted-sources", "reach-the-checkout"}
as_root = pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="plants only as root on Linux")


def _first(folder: str):
    return next(c for c in load_cases() if c.folder.name == folder)


def test_the_cases_that_look_for_planted_objects_use_the_placeholders():
    using = {folder.name for folder in CASES.iterdir() if folder.is_dir()
             for path in folder.rglob("*.py") if uses_placeholders(path.read_text(encoding="utf-8"))}
    assert using == LOOKERS


@pytest.mark.parametrize("folder", sorted(LOOKERS))
def test_a_built_case_looks_exactly_where_this_run_plants(tmp_path, folder):
    names = PlantedNames("a1b2c3")
    upload = build(_first(folder), tmp_path, names)
    text = "".join(p.read_text(encoding="utf-8") for p in upload.rglob("*.py"))
    assert planted_problems(upload, names) == []
    expected = {"connect-to-a-socket-file": [names.sockets[0], names.sockets[1][1:]],
                "keys-carry-sources": [names.key_name.decode()],
                "read-planted-sources": [*map(str, names.files), f'int("{names.key:#x}", 0)'],
                "reach-the-checkout": [names.sockets[0], names.sockets[1][1:]]}[folder]
    missing = [name for name in expected if name not in text]
    assert not missing, f"the built {folder} does not name {missing}: it would look elsewhere than the run planted"
    # Another run's names are not these: the same build checked against them is stale.
    assert planted_problems(upload, PlantedNames("ffffff")), "a built case passed the check of another run's names"


def test_a_case_that_looks_for_planted_objects_cannot_be_built_without_the_names(tmp_path):
    with pytest.raises(ValueError, match="PlantedNames"):
        build(_first("read-planted-sources"), tmp_path)


@pytest.mark.parametrize("literal", ['"/tmp/cs336-planted.sock"', 'b"cs336-planted-sources"',
                                     '"/dev/shm/cs336-planted-sources.json"', "KEY = 0x0C5336",
                                     '"/tmp/cs336-planted-{planted_token}.sock"'])
def test_a_stale_literal_is_found(literal):
    names = PlantedNames("0a0b0c")
    assert stale(literal, names), f"{literal} was taken for this run's name"
    assert stale(names.substitute('"/tmp/cs336-planted-{planted_token}.sock"'), names) == []


def test_tokens_differ_and_the_key_is_a_valid_key_t():
    drawn = [new_names() for _ in range(50)]
    assert len({n.token for n in drawn}) > 45
    assert all(0 < n.key < 2**31 for n in drawn)
    with pytest.raises(ValueError, match="6 lowercase hex"):
        PlantedNames("../x")


def _connects(address: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.connect(address)
        except OSError:
            return False
        return True


@as_root
def test_two_runs_plant_side_by_side_and_clean_up_only_their_own():
    first, second = PlantedNames("00aa01"), PlantedNames("00aa02")
    with planted_sources(first) as planted_first:
        with planted_sources(second) as planted_second:
            assert planted_first and planted_second
            assert all(_connects(a) for a in (*first.sockets, *second.sockets))
        # The second run's clean-up left the first's objects in place.
        assert all(_connects(a) for a in first.sockets), "the second run's clean-up removed the first's sockets"
        assert all(p.exists() for p in first.files)
    assert not any(p.exists() for p in (*first.files, *second.files))
    assert not os.path.exists(first.sockets[0])


@contextlib.contextmanager
def _segment(key: int):
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(key, 16, IPC_CREAT | IPC_EXCL | 0o600)
    assert segment >= 0
    try:
        yield
    finally:
        libc.shmctl(segment, IPC_RMID, None)


@as_root
@pytest.mark.parametrize("taken", ["file", "socket file", "abstract socket", "segment"])
def test_a_taken_name_stops_planting_named(taken):
    names = PlantedNames("00bb03")
    with contextlib.ExitStack() as stack:
        if taken == "file":
            names.files[0].write_text("someone else's")
            stack.callback(names.files[0].unlink)
            what = str(names.files[0])
        elif taken in ("socket file", "abstract socket"):
            address = names.sockets[0 if taken == "socket file" else 1]
            holder = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
            holder.bind(address)
            if taken == "socket file":
                stack.callback(os.unlink, address)
            what = repr(address)
        else:
            stack.enter_context(_segment(names.key))
            what = f"{names.key:#x}"
        with pytest.raises(PlantingError) as raised, planted_sources(names):
            pass
        assert what in str(raised.value) and "Another red-team run" in str(raised.value)
        if taken == "file":  # what was there before is not this run's to remove
            assert names.files[0].read_text() == "someone else's"
        if taken == "socket file":
            assert os.path.exists(names.sockets[0])

"""The sandbox's bounds, piece by piece and without grading anything: what crosses from the worker
is bounded and valid before it is kept, root makes the tests' folders without following
links, leftovers of a worker's user are removed, the disk
quota is counted, results.json stays small and free of machine paths, and grades.csv is safe to
open in a spreadsheet. Each test names the mistake it catches."""

from __future__ import annotations

import csv
import ctypes
import json
import os
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch

from adapters import _codec, _remote_error
from staff.course.folder import Submission
from staff.course.gradebook import Row, spreadsheet_safe, write_csv
from staff.grading.scrub import scrub, share_output
from staff.sandbox.frames import MAGIC, FrameError, PipeClosed, read_frame, write_frame
from staff.sandbox.layout import make_shared_folder
from staff.sandbox.leftovers import ipc_objects, remove_leftovers
from staff.sandbox.quota import DiskQuota
from tests.checks import write_new_file
from tests.failure_output import failure_text
from tests.grading import GradedTest

LINUX_ROOT = sys.platform == "linux" and os.geteuid() == 0


# -- what crosses from the worker -------------------------------------------------------------------


def test_lone_surrogates_are_replaced_when_decoded():
    # Mistake: keeping the worker's strings as JSON gave them; a lone surrogate then crashes every
    # UTF-8 writer after it (results.json's printer, grades.csv).
    value = _codec.decode(json.dumps(["ok \ud800", {"{": [["k\udfff", "v\ud83d"]]}]), [])
    for text in (value[0], *value[1].keys(), *value[1].values()):
        text.encode("utf-8")  # raises on a lone surrogate
    assert value[0] == "ok \ufffd"


def test_an_error_from_the_worker_is_bounded_and_keeps_its_innermost_frames():
    # Mistake: rebuilding the worker's exception whole (a 64 MiB message kept by pytest per test).
    error = _remote_error.as_exception(_remote_error.RemoteError("Boom", "ValueError", "x" * 10**6 + "\ud800",
                                                                 "outer\n" * 10**5 + "innermost frame"))
    assert isinstance(error, ValueError)
    assert len(str(error)) < _remote_error.MAX_MESSAGE_CHARS + 200 and "more characters not shown" in str(error)
    note = error.__notes__[0]
    assert len(note) < _remote_error.MAX_TRACEBACK_CHARS + 200 and note.endswith("innermost frame")


def test_a_tensor_claiming_far_more_than_its_storage_is_refused():
    # Mistake: trusting shape and strides against the storage's end only: a stride-0 view of 10**8
    # elements over 4 bytes passes that check, and a test's .tolist() then costs gigabytes.
    header = json.dumps({"T": [0, "float32", [10**8], [0], 0, False, "cpu"]})
    with pytest.raises(_codec.CodecError, match="stride-0 or overlapping view"):
        _codec.decode(header, [bytearray(4)])


def test_a_reply_dict_of_keys_sharing_one_hash_is_refused():
    # Mistake caught: rebuilding a reply's dict as sent. Int keys n * (2**61 - 1) all hash to 0, and each
    # insertion compares the key with every earlier one: 250,000 of them cost the test process minutes.
    colliding = [[n * (2**61 - 1), 0] for n in range(1, _codec.MAX_SAME_HASH + 2)]
    with pytest.raises(_codec.CodecError, match="share a hash"):
        _codec.decode(json.dumps({"{": colliding}), [])
    # The limit must not refuse honest dicts: as many colliding keys as allowed, and many distinct ints.
    assert len(_codec.decode(json.dumps({"{": colliding[:-1]}), [])) == _codec.MAX_SAME_HASH
    assert len(_codec.decode(json.dumps({"{": [[n, n] for n in range(10_000)]}), [])) == 10_000


def test_a_blob_named_by_many_nodes_is_decoded_once():
    # Mistake caught: a copy of the blob for each node that names it. An encoder the worker's code can change
    # named one 60 MiB blob 48 times, and the test process held 2.8 GiB of copies (6,441 MiB at its peak).
    # A frame's blobs arrive as bytearrays (read in place), which bytes() copies; other callers pass bytes.
    values = _codec.decode(json.dumps([{"B": 0}] * 48), [bytearray(1 << 20)])
    assert values == [bytes(1 << 20)] * 48 and all(value is values[0] for value in values)
    arrays = _codec.decode(json.dumps([{"N": ["uint8", [1 << 20], 0]}] * 48), [bytes(1 << 20)])
    assert all(np.shares_memory(array, arrays[0]) for array in arrays), "each array over a copy of its own"


def test_a_header_of_many_lists_is_refused_before_any_is_built():
    # Mistake caught: lists decoded however many the header holds. A worker's encoder (its code can
    # change it) sent 8 MiB of lists nested 60 deep, 4.2 million, which json.loads and then the decoder
    # each built (751 MiB and 6.4 s of the test process for one reply). The bound is checked on the
    # header's text, before json.loads; and an honest value past it is refused where it is encoded.
    nested = "[" * 60 + "]" * 60
    header = "[" + ",".join([nested] * (_codec.MAX_CONTAINERS // 60 + 1)) + "]"
    tracemalloc.start()
    try:
        with pytest.raises(_codec.CodecError, match="lists and objects"):
            _codec.decode(header, [])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"refusing held {peak:,} bytes"
    with pytest.raises(_codec.CodecError, match="send a tensor or an array"):
        _codec.encode([[i] for i in range(_codec.MAX_CONTAINERS)])
    rows = [[float(i)] * 3 for i in range(10_000)]  # a table as nested lists: crosses as it is
    assert _codec.copy(rows) == rows and _codec.copy({str(i): (i, i) for i in range(50_000)})["7"] == (7, 7)


def test_a_small_broadcast_view_still_crosses():
    # The bound must not refuse what students honestly return: expand() views of modest size.
    x = torch.arange(4.0).expand(1000, 4)
    got = _codec.copy(x)
    assert got.stride() == (0, 1) and torch.equal(got, x)


def test_blobs_read_into_bytearrays_are_used_in_place():
    # Mistake: copying each blob again while decoding (three copies of a reply at once).
    blob = bytearray(torch.arange(4, dtype=torch.int32).numpy().tobytes())
    tensor = _codec.decode(json.dumps({"T": [0, "int32", [4], [1], 0, False, "cpu"]}), [blob])
    blob[0:4] = (7).to_bytes(4, "little")
    assert tensor[0].item() == 7


def test_read_frame_refuses_a_header_or_blobs_past_its_limits():
    read, write = os.pipe()
    try:
        write_frame(write, {"x": "y" * 1000}, [b"z" * 100])
        with pytest.raises(FrameError, match="header of .* over the limit"):
            read_frame(read, max_header=100)
    finally:
        os.close(read)
        os.close(write)
    read, write = os.pipe()
    try:
        write_frame(write, {}, [b"z" * 5000])
        with pytest.raises(FrameError, match="over the limit of 4096"):
            read_frame(read, max_blobs=4096)
    finally:
        os.close(read)
        os.close(write)


def _frame_file(tmp_path: Path, header: dict, blobs: list[bytes] = ()) -> int:
    """A frame written to a file and opened for reading (a pipe would hold 64 KiB of it)."""
    path = tmp_path / "frame"
    with open(path, "wb") as handle:
        write_frame(handle.fileno(), header, blobs)
    return os.open(path, os.O_RDONLY)


def test_read_frame_counts_a_headers_lists_before_it_builds_them(tmp_path):
    # Mistake caught: the frame's own header parsed with no count of its containers (a worker wrote
    # 8 MiB of nested lists as a reply's id, which the codec's bound never saw: 229 MiB of the test
    # process over the reference's); or a bound so tight that a value the codec may send, whose header
    # travels inside the frame's as a string, is refused.
    fd = _frame_file(tmp_path, {"id": [[]] * 400_000})
    try:
        with pytest.raises(FrameError, match="400,003 lists and objects is over the limit of 400,000"):
            read_frame(fd)
    finally:
        os.close(fd)
    fd = _frame_file(tmp_path, {}, [b""] * 300_001)  # 4.2 million empty blobs took read_frame 2.2 s and 310 MiB
    try:
        with pytest.raises(FrameError, match="300,001 blobs is over the limit of 300,000"):
            read_frame(fd)
    finally:
        os.close(fd)
    value, blobs = _codec.encode([[]] * (_codec.MAX_CONTAINERS - 1))
    fd = _frame_file(tmp_path, {"ok": True, "value": value, "error": "[{" * 4000})
    try:
        header, _ = read_frame(fd)
    finally:
        os.close(fd)
    assert len(_codec.decode(header["value"], blobs)) == _codec.MAX_CONTAINERS - 1


def test_a_closed_pipe_is_told_apart_from_a_bad_frame():
    # The grader blames a closed pipe on how the child ended, and a bad frame on what it sent.
    read, write = os.pipe()
    os.write(write, MAGIC[:2])
    os.close(write)
    with pytest.raises(PipeClosed):
        read_frame(read)
    os.close(read)


def test_hiding_expected_values_is_linear_and_still_hides_them():
    # Mistake: `^(\s*expected:)` with re.MULTILINE lets \s run across lines: quadratic on a message
    # of whitespace lines. The pattern must not let a line's match span other lines.
    message = "the sum of x\n  expected: 42\n  got: 7\n" + " \n" * 50_000
    test = GradedTest("t", "t", "1.1", 1, 1.0, False, hidden=True, visibility="hidden")
    text = failure_text(AssertionError(message), test, [])
    assert "42" not in text and "expected: (not shown for this test)" in text and "got: 7" in text
    assert "\\s" not in __import__("tests.failure_output", fromlist=["_EXPECTED_LINE"])._EXPECTED_LINE.pattern


# -- the grade's own text ---------------------------------------------------------------------------


def test_outputs_share_a_budget_and_short_ones_stay_whole():
    tests = [GradedTest(f"t{i}", f"t{i}", f"1.{i}", 1, 1.0, False, output="short") for i in range(10)]
    tests += [GradedTest("long", "long", "1.99", 1, 1.0, False, output="\ufffd" * 100_000)]
    share_output(tests, budget=20_000)
    assert all(t.output == "short" for t in tests[:10])
    assert len(json.dumps(tests[-1].output)) <= 20_000 and "output cut here" in tests[-1].output


def test_scrub_removes_machine_paths_and_terminal_escapes():
    paths = [("/srv/grader/code/", ""), ("/srv/grader", "<grading folder>"), (sys.prefix, "<python>")]
    text = scrub(f"File /srv/grader/code/cs336_basics/x.py \x1b[2J {sys.prefix}/lib/x.py \ud800 /srv/grader/w", paths)
    assert "/srv" not in text and sys.prefix not in text and "\x1b" not in text
    text.encode("utf-8")


@pytest.mark.parametrize("cell", ["=HYPERLINK(\"http://x\",\"y\")", "+1", "-1+2", "@SUM(A1)", "\tx", "\rx"])
def test_a_spreadsheet_formula_in_a_name_is_written_as_text(tmp_path, cell):
    # Mistake: writing names from a Gradescope export raw (OWASP's CSV injection).
    submission = Submission(key="s1", path=tmp_path, student_id=cell, name=cell, email="a@b.c")
    write_csv([Row(submission, {(1, "public"): 1.0}, {(1, "public"): 1.0}, [], 1.0, cell)], tmp_path / "g.csv")
    rows = list(csv.reader((tmp_path / "g.csv").open(encoding="utf-8", newline="")))
    header, row = rows[0], rows[1]
    for column in ("student_id", "name", "error"):  # a carriage return is no character of a cell at all
        assert row[header.index(column)] == ("'" + cell if cell[0] != "\r" else "\ufffd" + cell[1:])
    assert spreadsheet_safe("Ada \ud800") == "Ada \ufffd" and spreadsheet_safe("Ada") == "Ada"


# -- folders, disk, leftovers ----------------------------------------------------------------------


def test_the_tests_folders_are_made_without_following_links(tmp_path):
    # Mistake: mkdir and chown by path inside a folder the worker controls: a link planted there
    # turns them onto the grader's own folder.
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o711)
    made = make_shared_folder(shared, "0001-test_x[a/b]", None)
    assert made.parent == shared and made.is_dir() and not made.is_symlink()
    os.symlink(tmp_path, shared / "0002-planted")
    with pytest.raises(FileExistsError):
        make_shared_folder(shared, "0002-planted", None)
    linked = tmp_path / "linked"
    os.symlink(shared, linked)
    with pytest.raises(OSError):  # O_NOFOLLOW: the folder itself may not be a link
        make_shared_folder(linked, "0003-x", None)


@pytest.mark.skipif(not LINUX_ROOT, reason="handing a folder to another user needs root on Linux")
def test_the_tests_folder_goes_to_the_worker_and_a_foreign_base_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o711)
    made = make_shared_folder(shared, "0001-x", (1_800_000_123, 1_800_000_123))
    assert (made.stat().st_uid, made.stat().st_gid) == (1_800_000_123, 1_800_000_123)
    os.chown(shared, 1_800_000_123, 1_800_000_123)  # as if the worker owned it
    with pytest.raises(RuntimeError, match="not a folder of its own"):
        make_shared_folder(shared, "0002-x", None)


def test_a_test_writes_into_a_students_folder_only_as_a_new_file(tmp_path):
    # Mistake: path.write_bytes() after a student call follows a link the student left at that name,
    # and root writes the test's bytes wherever it points.
    target = tmp_path / "grader-file"
    target.write_text("mine")
    os.symlink(target, tmp_path / "bad.pt")
    with pytest.raises(FileExistsError):
        write_new_file(tmp_path / "bad.pt", b"test bytes")
    assert target.read_text() == "mine"
    assert Path(write_new_file(tmp_path / "new.pt", b"x")).read_bytes() == b"x"


def test_the_counted_disk_quota_sees_bytes_and_files_and_not_holes(tmp_path):
    quota = DiskQuota([tmp_path], max_bytes=1 << 20, max_files=50)
    with open(tmp_path / "sparse.bin", "wb") as handle:
        handle.truncate(1 << 30)  # a sparse file takes no disk
    assert quota.exceeded() is None
    (tmp_path / "big.bin").write_bytes(b"x" * (2 << 20))
    assert "disk limit" in quota.exceeded() and not any(tmp_path.iterdir())
    for i in range(60):
        (tmp_path / f"{i}").touch()
    said = quota.exceeded()
    assert "in 51 files" in said, said  # the count stops at the first entry past the limit


@pytest.mark.skipif(sys.platform != "linux", reason="folder modes as Linux has them")
def test_a_folder_closed_to_the_grader_fails_the_quota_and_is_removed(tmp_path):
    # Mistake caught: a folder the counting cannot list skipped, as if empty (a worker that made one with
    # mode 0o300, which the filter leaves alone, kept 24,000 files past the 20,000 allowed, as an ordinary
    # user). Run as a uid without root's power to read any folder, as the grader is where it counts.
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="staff-quota-"))  # pytest's own folder is closed to another uid
    base.chmod(0o711)
    try:
        said, hidden = _closed_folder_counted(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "may not list" in said and not hidden, said


def _closed_folder_counted(tmp_path: Path) -> tuple[str, bool]:
    """What the quota says of a folder holding a folder of mode 0o300, counted by a uid that is not
    root, and whether that folder is still there after."""
    folder = tmp_path / "worker"
    folder.mkdir()
    hidden = folder / "hidden"
    hidden.mkdir(mode=0o300)
    os.chmod(hidden, 0o300)
    (hidden / "kept").touch()  # through the write and search rights the mode leaves
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        said = "setuid failed"
        try:
            if os.geteuid() == 0:
                for path in (folder, hidden, hidden / "kept"):
                    os.lchown(path, 65534, 65534)
                os.setgid(65534)
                os.setuid(65534)
            said = str(DiskQuota([folder], max_bytes=1 << 20, max_files=50).exceeded())
        finally:
            os.write(writer, said.encode()[:4000])
            os._exit(0)
    os.close(writer)
    said = os.read(reader, 4000).decode()
    os.waitpid(child, 0)
    return said, hidden.exists()


@pytest.mark.skipif(not LINUX_ROOT, reason="a user of its own needs root on Linux")
def test_what_a_worker_user_leaves_is_removed(tmp_path):
    # Mistake: ending the worker's processes but not what outlives them: System V objects (outside
    # Landlock and the address-space limit) and files in /tmp and /dev/shm.
    uid = 1_800_000_321
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.setgid(uid)
            os.setuid(uid)
            libc = ctypes.CDLL(None, use_errno=True)
            libc.shmget(0, 1 << 20, 0o1666)
            libc.msgget(0, 0o1666)
            libc.semget(0, 2, 0o1666)
            for folder in ("/tmp", "/dev/shm"):
                with open(f"{folder}/left-by-{uid}", "w") as handle:
                    handle.write("x")
                os.makedirs(f"{folder}/left-folder-{uid}/inner", exist_ok=True)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    def owned(owner: int) -> bool:
        return owner == uid

    assert len(ipc_objects(owned)) == 3
    assert remove_leftovers(uid) == []
    assert ipc_objects(owned) == [] and not Path(f"/tmp/left-by-{uid}").exists()


def _scripted_worker(monkeypatch, first_child_reads: bool, stopped_why: str | None = None):
    """A Worker with no process: its first child has ended (its reply pipe at EOF) after reading this
    call or before (ended by the zygote for `stopped_why`, where given); each fresh child then answers
    one frame from a thread."""
    import threading

    from staff.sandbox.client import Worker

    worker = Worker.__new__(Worker)
    worker.next_id, worker.cgroup, worker.stopped_why = 0, None, None
    request_read, worker.requests = os.pipe()
    worker.responses, response_write = os.pipe()

    def first_child() -> None:
        if first_child_reads:
            read_frame(request_read)  # it read the whole call, then died running it
        os.close(response_write)

    threading.Thread(target=first_child, daemon=True).start()

    def fresh_child() -> str:
        served_read, worker.requests = os.pipe()
        worker.responses, served_write = os.pipe()

        def serve() -> None:
            request, _ = read_frame(served_read)
            write_frame(served_write, {"id": request["id"], "ok": True, "value": "null"})

        threading.Thread(target=serve, daemon=True).start()
        worker.stopped_why = stopped_why
        return stopped_why or "exited with code 0"

    monkeypatch.setattr(worker, "fresh_child", fresh_child)
    return worker


def test_a_child_that_ended_before_reading_a_call_does_not_fail_it(monkeypatch):
    # Mistake: blaming the next call for a child that ended after answering its last one (a thread of
    # the student's that exits later): a test of another problem then failed with "exited with code 0".
    import time

    worker = _scripted_worker(monkeypatch, first_child_reads=False)
    reply, _ = worker._request({"op": "ping"}, [], time.monotonic() + 10)
    assert reply["ok"] is True


def test_a_child_the_zygote_ended_between_calls_fails_the_next_call(monkeypatch):
    # Mistake: a child ended between calls for what its processes held (a thread of the student's
    # mapping deleted files again) taken for one that ended on its own: the call goes to a fresh child,
    # and a child that holds too much again at once never loses a call.
    import time

    from staff.sandbox.failures import WorkerCrashed

    why = "was stopped by the grader: your code's processes held 1,080 pipes at once"
    worker = _scripted_worker(monkeypatch, first_child_reads=False, stopped_why=why)
    with pytest.raises(WorkerCrashed, match="1,080 pipes"):
        worker._request({"op": "ping"}, [], time.monotonic() + 10)


class _HoldingWorker:
    """A Worker stand-in whose every call answers None, and whose zygote says once, after a call, that
    the child's processes hold too much (`why`)."""

    requests = 0

    def __init__(self, why: str) -> None:
        self.why, self.fresh_children = why, 0
        self.log = type("Log", (), {"take": staticmethod(lambda: "")})()

    def request(self, header: dict, blobs: list, deadline: object) -> tuple[dict, list]:
        return {"ok": True, "value": "null"}, []

    def usage(self) -> None:
        return None

    def held_past_limits(self) -> str | None:
        why, self.why = self.why, None
        return why

    def fresh_child(self) -> str:
        self.fresh_children += 1
        return ""


def test_the_call_after_which_the_processes_hold_too_much_fails_and_the_next_is_served():
    # Mistake caught: the route not asking the zygote after a call (the zygote's timer ended the child
    # between calls instead, and whichever call came next, in any problem, lost its points: Problem 2
    # 33/35 for an attack in Problem 1), or asking but letting the same child serve on.
    from staff.sandbox.failures import WorkerCrashed
    from staff.sandbox.worker_route import WorkerRoute

    def run_bytes_per_element() -> None:
        """A stand-in adapter."""

    why = "was stopped by the grader: your code's processes held 1,080 pipes at once"
    worker = _HoldingWorker(why)
    route = WorkerRoute(worker, 10.0)
    route.begin_test("test_bytes_per_element", 0)
    with pytest.raises(WorkerCrashed, match="run_bytes_per_element: the process running your code was stopped"):
        route.call(run_bytes_per_element, (), {})
    assert worker.fresh_children == 1
    route.begin_test("test_next", 0)
    assert route.call(run_bytes_per_element, (), {}) is None


def test_a_child_that_read_a_call_and_died_fails_that_call(monkeypatch):
    import time

    from staff.sandbox.failures import WorkerCrashed

    worker = _scripted_worker(monkeypatch, first_child_reads=True)
    with pytest.raises(WorkerCrashed, match="exited with code 0"):
        worker._request({"op": "ping"}, [], time.monotonic() + 10)


def test_a_path_after_an_escaped_separator_is_scrubbed():
    # A submission that read its parent's /proc/PID/cmdline (in the worker's PID namespace, the zygote:
    # "python ... SCRATCH/code/worker.py SCRATCH/grader/launch.json", NUL-separated) raised it; the worker
    # escaped the NULs to "\x00", and the path after each, preceded by "0", read as the end of another
    # path and reached results.json. Mistakes caught: that, and scrubbing a path inside another name.
    from staff.grading.scrub import scrub

    paths = [("/tmp/staff-grade-abc", "<grading folder>")]
    raised = r"python\x00-I\x00/tmp/staff-grade-abc/code/worker.py\x00/tmp/staff-grade-abc/grader/launch.json"
    assert "/tmp/staff-grade-abc" not in scrub(raised, paths)
    assert "/tmp/staff-grade-abc" not in scrub(r"a\u0000/tmp/staff-grade-abc/x\n/tmp/staff-grade-abc/y", paths)
    assert scrub("mine/tmp/staff-grade-abc", paths) == "mine/tmp/staff-grade-abc"


def test_no_cut_of_an_output_leaves_part_of_a_machine_path():
    # A path that a cut of a test's output (the test process keeps 4,000 characters; the worker a
    # message's first 4,000 and a traceback's last 8,000) falls inside is no longer a whole path, and
    # the grader's scrub, which matches whole paths, left its first part in results.json (seen in an
    # honest traceback: `File "/tmp/staff-grade-5z`). Mistake caught: a cut at a fixed character.
    from adapters._text import bounded
    from tests.failure_output import truncated

    paths = [("/tmp/staff-grade-abc/code/", ""), ("/tmp/staff-grade-abc", "<grading folder>")]
    line = 'File "/tmp/staff-grade-abc/code/cs336_basics/x.py", line 3, in f\n'
    for offset in range(len(line)):
        text = "." * offset + line * 200
        for kept in (truncated(text, 1000), bounded(text, 1000), bounded(text, 1000, keep_end=True)):
            shown = scrub(kept, paths)
            assert "/tmp" not in shown and "staff-" not in shown, (offset, shown[-200:])
    assert truncated("a" * 50 + " /x " + "b" * 300, 200).startswith("a" * 50 + " /x " + "b" * 90)  # no path cut


def test_the_grades_own_folders_are_scrubbed_even_glued_to_a_word():
    # A path preceded by a letter reads as the end of another path and is left alone (so that home
    # `/root` stays in `/autograder/root`); a submission glued one letter to its working folder and the
    # grade's scratch folder reached results.json ("w/tmp/staff-grade-r500wfve/workerx"). Its name is
    # drawn at random, so it is replaced wherever it stands. Mistake caught: the scratch folder scrubbed
    # only as a path of its own.
    from staff.grading.scrub import machine_paths
    from staff.sandbox.layout import Workspace

    scratch = Path("/tmp/staff-grade-r500wfve")
    workspace = Workspace(scratch, scratch / "grader", scratch / "code", scratch / "worker", scratch / "shared", None)
    paths = machine_paths(workspace)
    shown = scrub(f"w{scratch}/workerx and x{scratch}/code/cs336_basics/a.py", paths)
    assert "staff-grade-r500wfve" not in shown and shown == "w<grading folder>/workerx and xcs336_basics/a.py", shown
    home = os.path.expanduser("~")
    assert scrub(f"/autograder{home}/x", paths) == f"/autograder{home}/x"  # home is not random: a path of its own


def test_the_disk_count_walks_by_descriptor_and_stops_at_its_limits(tmp_path):
    # Mistakes caught (each got a worker's files past the limit as an ordinary user): folders named by
    # their whole path (a chain deeper than PATH_MAX raised ENAMETOOLONG and was skipped, 300 MiB kept);
    # a folder's own blocks left out (an ext4 folder emptied of 60,000 links kept 22 MiB); a folder read
    # whole before the limit is checked (half a million links, 3 GB of the test process); a file counted
    # once per link (honest hard links over the limit), or a descriptor held per level (a tree 1,200
    # folders deep, within the limits, then failed the count).
    deep = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(18):  # 18 x 251 characters: past PATH_MAX
        os.mkdir("d" * 250, dir_fd=deep)
        deeper = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=deep)
        os.close(deep)
        deep = deeper
    with open(os.open("big", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=deep), "wb") as handle:
        handle.write(b"x" * (2 << 20))
    os.close(deep)
    assert "disk limit" in DiskQuota([tmp_path], max_bytes=1 << 20, max_files=50).exceeded()

    folder = tmp_path / "links"
    folder.mkdir()
    (folder / "file").write_bytes(b"x" * (600 << 10))
    for i in range(30_000):
        os.link(folder / "file", folder / f"{i:05d}")
    tracemalloc.start()
    try:
        size, files, _ = DiskQuota([tmp_path], max_bytes=1 << 30, max_files=50).usage()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert files == 51 and peak < 1 << 20, (files, peak)
    size, files, _ = DiskQuota([tmp_path], max_bytes=1 << 30, max_files=40_000).usage()
    folders = (os.stat(tmp_path).st_blocks + os.stat(folder).st_blocks) * 512
    assert size - folders < 1 << 20, f"a file of 600 KiB with 30,001 links counted as {size - folders:,} bytes"
    for entry in os.scandir(folder):
        os.unlink(entry.path)
    assert DiskQuota([folder], 1 << 30, 50).usage()[0] >= os.stat(folder).st_blocks * 512 > 0

    chain = tmp_path / "chain"  # 1,500 folders deep, each named by a descriptor (a path that long is refused)
    handle = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    os.mkdir("chain", dir_fd=handle)
    for _ in range(1_500):
        below = os.open("chain" if _ == 0 else "c", os.O_RDONLY | os.O_DIRECTORY, dir_fd=handle)
        os.close(handle)
        os.mkdir("c", dir_fd=below)
        handle = below
    os.close(handle)
    quota = DiskQuota([chain], max_bytes=1 << 30, max_files=2_000)
    assert quota.usage()[1:] == (1_500, None) and quota.exceeded() is None  # deep, honest and counted whole
    said = DiskQuota([chain], max_bytes=1 << 30, max_files=1_000).exceeded()
    assert "1001 files" in said and not any(chain.iterdir()), said


def test_a_shape_of_many_dimensions_is_refused_before_its_product_is_taken():
    # Mistake caught: the shape's product taken before its dimensions are counted: a reply of three JSON
    # lists naming 419,018 dimensions of 2**63 - 1 cost the test process minutes of CPU (the product
    # grows 63 bits a step), after the call's timer had stopped.
    import time

    huge = [2**63 - 1] * 200_000
    started = time.process_time()
    for node in ({"N": ["<f4", huge, 0]}, {"T": [0, "float32", huge, [0] * len(huge), 0, False, "cpu"]}):
        with pytest.raises(_codec.CodecError, match="at most 64 dimensions"):
            _codec.decode(json.dumps(node), [b""])
    assert time.process_time() - started < 2.0
    assert _codec.copy(torch.zeros((1,) * 20)).shape == (1,) * 20  # many honest dimensions still cross


def test_a_value_returned_where_an_exception_is_due_is_shown_bounded():
    # Mistake caught: check_raises writing repr(returned) into its message: a stride-0 bool view of shape
    # (2,) * 21 over one byte, returned where a ValueError was due, took the test process 1.1 GiB over
    # the reference's (the fix for failure messages went through `shown`, and this one did not).
    from tests.checks import check_raises

    view = torch.empty(0, dtype=torch.bool).set_(torch.UntypedStorage(1), 0, [2] * 21, [0] * 21)
    with pytest.raises(AssertionError) as raised:
        check_raises(ValueError, lambda: view, what="bytes_per_parameter('lion', 'fp32')", see="handout")
    message = str(raised.value)
    assert "2,097,152 elements" in message and len(message) < 2_000, message[:2_000]

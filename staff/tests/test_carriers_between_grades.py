"""The carriers of data between grades, piece by piece and without grading anything: the seccomp
filter refuses every socket the worker did not make as a pair, kernel keys, message queues and the
rest; text from a submission reaches no screen or file with a control character; the scratch clean-up
survives any tree. Each test names the mistake it catches."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from adapters._text import shown_text
from staff import samples
from staff.course.batch import grade_one
from staff.course.folder import Submission
from staff.course.gradebook import write_gradebook
from staff.grading.scrub import scrub
from staff.sandbox import plugin_settings, syscall_filter, syscalls
from staff.sandbox.removal import remove_tree, scratch_folder
from staff.sandbox.settings import Settings
from staff.tests.filter_probe import ON_A_FILTERED_MACHINE, SECCOMP_MACHINES, verdict_of

EPERM, EAFNOSUPPORT = 1, 97
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK = 1, 2, 10, 16, 17, 40


# -- the seccomp filter -----------------------------------------------------------------------------


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_the_filter_refuses_each_listed_call_and_every_socket_on_both_architectures(machine):
    # Mistakes: an aarch64 number copied from x86_64 (the call stays open there), a jump offset off
    # by one around the socket checks, a unix pair allowed (its buffers, summed over forked children,
    # are kernel memory nothing but a memory group bounds).
    program, arch = syscall_filter.seccomp_program(machine), syscall_filter._AUDIT_ARCH[machine]
    deny, no_family, allow = 0x50000 | EPERM, 0x50000 | EAFNOSUPPORT, 0x7FFF0000
    numbers = syscall_filter.refused_numbers(machine)
    assert len(set(numbers.values())) == len(numbers), "two refused calls share a number"
    for name, number in numbers.items():  # EPERM, or ENOSYS where the review says so (clone3: glibc falls back)
        assert verdict_of(program, arch, number) == 0x50000 | syscalls.review()[name][2], name
    socket, socketpair = syscalls.numbers(machine)["socket"], syscalls.numbers(machine)["socketpair"]
    for family in (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK):
        assert verdict_of(program, arch, socket, family) == no_family
    assert verdict_of(program, arch, socketpair, AF_UNIX, 1) == deny  # SOCK_STREAM
    assert verdict_of(program, arch, socketpair, AF_INET) == deny
    for number in (0, 1, 3, 63, 64, 93):  # read, write, close, ... on one architecture or the other
        if number not in numbers.values():
            assert verdict_of(program, arch, number) == allow
    assert verdict_of(program, 0x40000003, 0) == deny  # i386 on a 64-bit kernel
    if machine == "x86_64":
        assert verdict_of(program, arch, 0x40000000 | 248) == deny  # add_key through the x32 ABI


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_a_gpu_grades_zygote_filter_lets_cuda_start_and_refuses_the_rest(machine):
    # CUDA's driver makes a unix socket and a memfd as cuInit runs (error 304 without them): a GPU grade's
    # zygote allows AF_UNIX sockets and memfd_create, until each child stacks the CPU grade's filter.
    # Mistakes: a jump that allows internet or netlink sockets too, or drops the listed calls.
    program, arch = syscall_filter.seccomp_program(machine, sockets=False), syscall_filter._AUDIT_ARCH[machine]
    deny, no_family, allow = 0x50000 | EPERM, 0x50000 | EAFNOSUPPORT, 0x7FFF0000
    for name, number in syscall_filter.refused_numbers(machine).items():
        if name not in syscalls.GPU_ONLY:
            assert verdict_of(program, arch, number) == 0x50000 | syscalls.review()[name][2], name
    socket = syscalls.numbers(machine)["socket"]
    for family in (AF_INET, AF_INET6, AF_NETLINK):
        assert verdict_of(program, arch, socket, family) == no_family
    assert verdict_of(program, arch, socket, AF_UNIX) == allow
    assert verdict_of(program, arch, syscalls.numbers(machine)["memfd_create"]) == allow
    assert verdict_of(program, arch, syscalls.numbers(machine)["socketpair"], AF_UNIX) == allow
    assert verdict_of(program, 0x40000003, 0) == deny


@pytest.mark.slow
def test_a_gpu_grade_asks_for_a_worker_that_can_start_cuda(tmp_path, monkeypatch):
    # Mistake: a GPU grade whose worker is confined as a CPU grade's, which scored the reference 2 of 12 on
    # an H100, every CUDA call failing with error 304 (a CPU grade keeps every protection).
    from staff.grading import grade as grading
    asked = []
    real_build = grading.build

    def build(*args):  # the real layout; what it tells the sandbox plugin is read back as the plugin reads it
        workspace = real_build(*args)
        asked.append(plugin_settings.read(workspace.settings).worker)
        return workspace

    monkeypatch.setattr(grading, "build", build)
    samples.stubs(tmp_path)
    for gpu in (True, False):
        grading.grade(tmp_path, Settings(hidden=False, problems={1}, gpu=gpu, test_timeout_s=10.0), progress=False)
    assert [worker.cuda for worker in asked] == [True, False]
    assert all(worker.protections.landlock and worker.protections.namespaces and worker.protections.seccomp
               for worker in asked)


def test_the_refused_calls_hold_every_carrier_of_data_between_grades():
    # Mistake: dropping a call from the list while tidying it (the tests above would still pass).
    assert set(syscall_filter.REFUSED) >= {
        "add_key", "keyctl", "request_key", "mq_open", "mq_timedsend", "userfaultfd", "bpf", "perf_event_open",
        "fanotify_init", "name_to_handle_at", "open_by_handle_at", "process_vm_readv", "process_vm_writev",
        "ptrace", "kcmp", "pidfd_getfd", "memfd_secret", "shmget", "msgget", "semget", "io_uring_setup"}


_PROBE = r"""
import ctypes, json, os, socket, sys
sys.path.insert(0, sys.argv[1])
import syscall_filter
status = syscall_filter.deny_syscalls()
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = {"status": status}
for name, family in (("inet", 2), ("inet6", 10), ("unix", 1), ("netlink", 16), ("packet", 17), ("vsock", 40)):
    try:
        socket.socket(family, socket.SOCK_DGRAM).close()
        found[name] = "opened"
    except OSError as error:
        found[name] = error.errno
try:
    socket.socketpair()
    found["pair"] = "opened"
except OSError as error:
    found["pair"] = error.errno
reading, writing = os.pipe()
os.write(writing, b"pipe")
found["pipe"] = os.read(reading, 4).decode()
def call(name, *args):
    result = libc.syscall(syscall_filter.refused_numbers(os.uname().machine)[name], *args)
    return "worked" if result >= 0 else ctypes.get_errno()
found["add_key"] = key = call("add_key", b"user", b"cs336-probe", b"sources", 7, -4)  # the user keyring
if key == "worked":  # a broken filter leaves no key behind
    libc.syscall(syscall_filter.refused_numbers(os.uname().machine)["keyctl"], 21, -4)
found["keyctl"] = call("keyctl", 0, -4, 0)  # KEYCTL_GET_KEYRING_ID
found["request_key"] = call("request_key", b"user", b"cs336-probe", None, 0)
found["mq_open"] = call("mq_open", b"cs336-probe", 0, 0, None)  # O_RDONLY: creates nothing
found["shmget"], found["msgget"] = call("shmget", 0, 4096, 0o1600), call("msgget", 0, 0o1600)
print(json.dumps(found))
"""


@pytest.mark.skipif(not ON_A_FILTERED_MACHINE, reason="the filter is written for Linux on x86_64 and aarch64")
def test_the_installed_filter_refuses_sockets_socketpairs_keys_and_queues_and_keeps_pipes():
    # Mistakes: a filter that checks the number but not the architecture, an allow-list that lets
    # AF_UNIX socket() through (a path or abstract socket of another grade) or a unix pair, keys left
    # open; or one that refuses pipes with them (multiprocessing's queues and one-way pipes use them).
    folder = Path(syscall_filter.__file__).parent
    done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(folder)], capture_output=True, text=True,
                          check=True)
    found = json.loads(done.stdout)
    assert found["status"].startswith("on")
    for family in ("inet", "inet6", "unix", "netlink", "packet", "vsock"):
        assert found[family] == EAFNOSUPPORT, family
    assert found["pair"] == EPERM
    assert found["pipe"] == "pipe"
    for name in ("add_key", "keyctl", "request_key", "mq_open", "shmget", "msgget"):
        assert found[name] == EPERM, name


# -- text from a submission, shown ------------------------------------------------------------------

_CONTROL_RANGES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
C1_AND_BIDI = "\x9b2J\x9d0;title\x07 \u202eevil\u202c \u2066x\u2069 \u200e\u200f\u061c \x1b[31m\r\x00"


def test_shown_text_replaces_c0_c1_and_bidi_controls_and_keeps_the_rest():
    # Mistake: a pattern of C0 controls only: U+009B (CSI) and U+009D (OSC) drive 8-bit terminals,
    # and U+202E reverses what a TA reads ("fdp.exe" shown as "exe.pdf").
    shown = shown_text(f"{C1_AND_BIDI}\n\té 中 \u00a0 \U0001f600 \ud800")
    assert not _CONTROL_RANGES.search(shown)
    assert shown.endswith("\n\té 中 \u00a0 \U0001f600 \ufffd")
    assert scrub(C1_AND_BIDI, []) == shown_text(C1_AND_BIDI)  # results.json's text goes through it too


def test_grades_csv_and_summary_show_no_control_from_a_name_or_an_error(tmp_path):
    # Mistake: scrubbing results.json only: grades.csv takes names from Gradescope's export and
    # summary.md (printed to the console too) takes submission names and error lines as they are.
    key = f"ada\u202egpj.exe{C1_AND_BIDI.replace(chr(0), '')}"  # a folder's name holds no NUL
    submission = Submission(key=key, path=tmp_path, student_id="1", name=f"Ada {C1_AND_BIDI}", email="a@b.c")

    def grader(path: Path):
        raise RuntimeError(f"broken {C1_AND_BIDI}")

    grade_one(submission, tmp_path / "out" / key, grader)
    lines, _ = write_gradebook([submission], tmp_path / "out")
    for text in ("\n".join(lines), (tmp_path / "out" / "summary.md").read_text(encoding="utf-8"),
                 (tmp_path / "out" / "grades.csv").read_text(encoding="utf-8")):
        assert "broken" in text or "Ada" in text
        assert not _CONTROL_RANGES.search(text.replace("\r\n", "").replace("\n", ""))


# -- clean-up that cannot be stopped ----------------------------------------------------------------


def _deep_tree(top: Path, depth: int, name: str = "d" * 200) -> None:
    """`top`/NAME/NAME/... `depth` folders deep (far past PATH_MAX), a file at the bottom."""
    handle = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=handle)
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=handle)
        os.close(handle)
        handle = below
    os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, dir_fd=handle))
    os.close(handle)


def _odd_tree(top: Path, outside: Path) -> None:
    """Links out (to a folder and a file that must survive), odd names, a FIFO, closed folders."""
    (top / "link-to-folder").symlink_to(outside)
    (top / "link-to-file").symlink_to(outside / "keep.txt")
    os.mkfifo(top / "fifo")
    (top / "new\nline \u202e").mkdir()
    (top / "new\nline \u202e" / "x").write_text("x")
    with open(os.path.join(os.fsencode(top), b"\xff\xfe not utf-8"), "wb") as handle:
        handle.write(b"x")
    for mode in (0o000, 0o500, 0o100, 0o400):
        closed = top / f"closed-{mode:o}"
        (closed / "inner").mkdir(parents=True)
        (closed / "inner" / "file").write_text("x")
        closed.chmod(mode)


def test_remove_tree_goes_through_a_deep_odd_tree_and_follows_no_link(tmp_path):
    # Mistake: shutil.rmtree (RecursionError at 1,000 levels, a descriptor per level, names past
    # PATH_MAX) or a walk that follows a link out of the tree.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    tree = tmp_path / "tree"
    tree.mkdir()
    _deep_tree(tree, 1_500)
    _odd_tree(tree, outside)
    assert remove_tree(tree) == []
    assert not tree.exists() and (outside / "keep.txt").read_text() == "keep"
    assert remove_tree(tree) == []  # already gone: nothing to say


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="needs root to become another user")
def test_remove_tree_opens_up_closed_folders_as_their_owner():
    # Mistake: giving up on a folder made 0o000 or read-only: a grader that is not root (the worker
    # runs as the grader's user) leaves it, and the scratch folder, on disk.
    uid, base = 1_800_000_777, Path(tempfile.mkdtemp(prefix="staff-test-"))
    os.chown(base, uid, uid)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.setgid(uid)
            os.setuid(uid)
            (base / "outside").mkdir()
            (base / "outside" / "keep.txt").write_text("keep")
            (base / "tree").mkdir()
            _odd_tree(base / "tree", base / "outside")
            _deep_tree(base / "tree" / "new\nline \u202e", 1_100)
            os.write(write, json.dumps(remove_tree(base / "tree")).encode())
        finally:
            os._exit(0)
    os.close(write)
    said = os.read(read, 1 << 16).decode()
    os.close(read)
    os.waitpid(child, 0)
    try:
        assert said == "[]" and not (base / "tree").exists() and (base / "outside" / "keep.txt").exists()
    finally:
        assert remove_tree(base) == []


def test_a_scratch_folder_is_removed_and_its_clean_up_never_raises(monkeypatch, capsys):
    # Mistake: a clean-up error raised out of the block, losing the grade made inside it.
    with scratch_folder("staff-test-") as folder:
        _deep_tree(folder, 1_200, "x")
    assert not folder.exists()
    monkeypatch.setattr("staff.sandbox.removal.remove_tree", lambda path: ["could not"])
    with scratch_folder("staff-test-") as kept:
        made = "the grade"
    assert made == "the grade" and "not removed whole" in capsys.readouterr().err
    os.rmdir(kept)

"""The worker's seccomp filter is the review of staff/sandbox/syscalls.py: every call of the kernel's
table has a line there, the filter allows exactly what the review allows (on both architectures), and,
in a process that installs it, each class of carrier the review closed stays closed. Each
test names the mistake it catches."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from adapters._page_cache import page_cache_shows_reads, resident_bytes
from staff.sandbox import confine, syscall_filter, syscalls
from staff.sandbox.syscall_numbers import NUMBERS
from staff.tests.filter_probe import ON_A_FILTERED_MACHINE, PRELUDE, SECCOMP_MACHINES, verdict_of

ALLOW, ERRNO = 0x7FFF0000, 0x50000
EPERM, EINVAL, ENOSYS, EAFNOSUPPORT, EOPNOTSUPP = 1, 22, 38, 97, 95
HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


def test_every_call_of_the_table_is_reviewed_once_with_a_reason():
    # Mistake: a call added to syscall_numbers.py (or a new kernel's) with no line in the review.
    review = syscalls.review()
    missing = sorted(set(NUMBERS) - set(review))
    assert not missing, f"calls with no reason in staff/sandbox/syscalls.py: {missing}; say why each is safe " \
        "or refuse it"
    for name, (verdict, reason, _) in review.items():
        assert reason.strip() and "\n" not in reason, f"{name}: a review line needs a one-line reason"


@pytest.mark.skipif(not HEADER.exists(), reason="the kernel headers of x86_64 are not installed")
def test_the_table_has_every_call_of_the_installed_kernel_headers_with_its_number():
    # Mistake: a table that misses a call (it would then go unreviewed) or has a number wrong.
    header = dict(re.findall(r"#define __NR_(\w+) (\d+)", HEADER.read_text()))
    wrong = {name: (int(number), NUMBERS.get(name, (None,))[0]) for name, number in header.items()
             if NUMBERS.get(name, (None,))[0] != int(number)}
    assert not wrong, f"calls of {HEADER} missing from syscall_numbers.py or numbered differently: {wrong}"


@pytest.mark.parametrize("sockets", [True, False], ids=["cpu", "gpu"])
@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_the_filter_allows_exactly_what_the_review_allows(machine, sockets):
    # Mistakes: a call allowed by the program but not in the review (the next person adding one must
    # write why), a refused call answered with the wrong errno, a run of numbers off by one, a newer
    # kernel's call let through instead of ENOSYS.
    program, arch = syscall_filter.seccomp_program(machine, sockets), syscall_filter._AUDIT_ARCH[machine]
    by_number = {number: name for name, number in syscalls.numbers(machine).items()}
    review = syscalls.review()
    for number in range(600):
        got, name = verdict_of(program, arch, number), by_number.get(number)
        if name is None:
            assert got == ERRNO | ENOSYS, f"number {number} is in no review but the filter answers {got:#x}"
            continue
        verdict, _, code = review[name]
        if verdict == "checked":
            continue  # its arguments decide; see the tests below and test_carriers_between_grades.py
        if verdict == "allowed" or (not sockets and name in syscalls.GPU_ONLY):
            assert got == ALLOW, f"{name} ({number}) is allowed by the review but the filter answers {got:#x}"
        else:
            assert got == ERRNO | code, f"{name} ({number}) is refused by the review but the filter answers {got:#x}"


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_the_checked_calls_refuse_their_dangerous_arguments(machine):
    # Mistakes: any unix pair (a datagram pair can send to any named socket by address; a stream pair's
    # buffers are kernel memory that forked children multiply past any limit but a memory group), clone
    # with CLONE_NEWUSER (every capability inside it), TIOCSTI, a file lock; or the check that refuses
    # the harmless forms (threads, F_GETFL) with them.
    program, arch = syscall_filter.seccomp_program(machine), syscall_filter._AUDIT_ARCH[machine]
    have = syscalls.numbers(machine)
    deny = ERRNO | EPERM

    def verdict(name: str, *args: int) -> int:
        return verdict_of(program, arch, have[name], *args)

    for kind in (socket.SOCK_STREAM | socket.SOCK_CLOEXEC, 5, socket.SOCK_DGRAM):  # 5: seqpacket
        assert verdict("socketpair", 1, kind) == deny, kind
    assert verdict("clone", 0x003D0F00) == ALLOW  # what glibc's pthread_create asks for
    assert verdict("clone", 0x01200011) == ALLOW  # fork
    for flag in (0x20000, 0x10000000, 0x08000000, 0x40000000, 0x20000000):  # NEWNS, NEWUSER, NEWIPC, NEWNET, NEWPID
        assert verdict("clone", 0x01200011 | flag) == deny, hex(flag)
    assert verdict("ioctl", 0, 0x5412) == deny and verdict("ioctl", 0, 0x541B) == ALLOW  # TIOCSTI; FIONREAD
    assert verdict("fcntl", 0, 6) == deny and verdict("fcntl", 0, 38) == deny and verdict("fcntl", 0, 3) == ALLOW
    assert verdict("clone3") == ERRNO | ENOSYS  # glibc then falls back to clone, whose flags are checked
    # Socket buffers are kernel memory no limit of an ordinary user's grade counts: 508 pairs whose buffers
    # were raised held 7,973 MiB; at the default sizes the open-file limit bounds them (226 MiB). Mistakes:
    # the sizes left settable, or every SOL_SOCKET option (or another level's option 7) refused with them.
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF, 32, 33):  # and SO_SNDBUFFORCE, SO_RCVBUFFORCE
        assert verdict("setsockopt", 3, socket.SOL_SOCKET, option, 0, 4) == deny, option
    assert verdict("setsockopt", 3, socket.SOL_SOCKET, socket.SO_KEEPALIVE, 0, 4) == ALLOW
    assert verdict("setsockopt", 3, 6, 7, 0, 4) == ALLOW  # IPPROTO_TCP's option 7 is not a buffer size
    for command in (8, 10, 15):  # F_SETOWN, F_SETSIG, F_SETOWN_EX: the kernel signals the owner, any pid
        assert verdict("fcntl", 0, command, 4242) == deny, command
    assert verdict("prctl", 22, 2) == deny and verdict("prctl", 15, 0) == ALLOW  # PR_SET_SECCOMP; PR_SET_NAME
    gpu = syscall_filter.seccomp_program(machine, sockets=False)
    assert verdict_of(gpu, arch, have["fcntl"], 0, 6) == ALLOW  # CUDA's caches may lock their files
    assert verdict_of(gpu, arch, have["prctl"], 22, 2) == ALLOW  # each child stacks the CPU grade's filter
    assert verdict_of(gpu, arch, have["clone"], 0x01200011 | 0x10000000) == deny


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_what_the_zygote_counts_cannot_be_hidden_from_it(machine):
    # The zygote counts the deleted files and pipes the worker's processes hold from /proc/PID/fd and
    # /proc/PID/maps. Mistakes: a thread with a file table of its own (clone with CLONE_THREAD, not
    # CLONE_FILES: its descriptors show only under /proc/PID/task/TID/fd; or CLONE_FS: its working folder, a
    # removed folder held, likewise), a process made not dumpable
    # (its /proc entries closed to the zygote), a pipe grown past the default 16 pages (the uid's
    # pipe-user-pages-soft is the TA's too), blocks kept past a file's end (FALLOC_FL_KEEP_SIZE, which
    # the file-size limit does not see); or a check so wide it refuses pthreads, fork, posix_fallocate,
    # F_GETPIPE_SZ or a process making itself dumpable again.
    program, arch = syscall_filter.seccomp_program(machine), syscall_filter._AUDIT_ARCH[machine]
    have, deny = syscalls.numbers(machine), ERRNO | EPERM

    def verdict(name: str, *args: int) -> int:
        return verdict_of(program, arch, have[name], *args)

    assert verdict("clone", 0x003D0F00 & ~0x400) == deny  # pthread_create's flags less CLONE_FILES
    assert verdict("clone", 0x003D0F00 & ~0x200) == deny  # less CLONE_FS (a working folder of its own)
    assert verdict("clone", 0x7E000000 | 0x4111) == deny  # a new namespace
    assert verdict("clone", 0x00010900) == deny  # CLONE_THREAD | CLONE_SIGHAND | CLONE_VM alone
    assert verdict("clone", 0x003D0F00) == verdict("clone", 0x01200011) == verdict("clone", 0x4111) == ALLOW
    assert verdict("prctl", 4, 0) == deny and verdict("prctl", 4, 2) == deny and verdict("prctl", 4, 1) == ALLOW
    # PR_FUTEX_HASH's SET_SLOTS (2**24 slots: 1.28 GiB of vmalloc a process, under no limit but a memory group)
    assert verdict("prctl", 78, 1, 1 << 24) == verdict("prctl", 78, 2) == ERRNO | EINVAL
    assert verdict("fcntl", 5, 1031, 1 << 20) == deny and verdict("fcntl", 5, 1032) == ALLOW  # F_SETPIPE_SZ; GET
    assert verdict("fallocate", 5, 0, 0, 1 << 20) == ALLOW  # posix_fallocate
    for mode in (1, 3, 0x10, 0x11, 0x20, 1 << 32):  # KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE, its KEEP_SIZE, INSERT_RANGE
        assert verdict("fallocate", 5, mode, 0, 1 << 20) == ERRNO | EOPNOTSUPP, mode
    gpu = syscall_filter.seccomp_program(machine, sockets=False)  # the zygote's, whose children stack the above
    assert verdict_of(gpu, arch, have["prctl"], 4, 0) == ALLOW
    # Shared memory with no file, which no RSS shows (its pages stay when the page tables drop them) and which,
    # unmapped but for its first page, shows in no maps at its size; and a name for a mapping, which hides what
    # the maps call it. Mistakes: MAP_SHARED_VALIDATE (3) let through, or the check so wide it refuses a private
    # mapping (every thread's stack, malloc's arenas) or a file's shared mapping (np.memmap).
    no_file = (1 << 64) - 1  # fd -1
    for flags in (0x21, 0x23, 0x21 | 0x8000):  # SHARED, SHARED_VALIDATE, and with MAP_POPULATE
        assert verdict("mmap", 0, 1 << 20, 3, flags, no_file, 0) == deny, hex(flags)
    for flags in (0x22, 0x20022, 0x01, 0x03, 0x02):  # private anonymous (a stack too), a file's shared or private
        assert verdict("mmap", 0, 1 << 20, 3, flags, no_file if flags & 0x20 else 5, 0) == ALLOW, hex(flags)
    assert verdict("prctl", 0x53564D41, 0, 1 << 30, 4096, 1 << 31) == ERRNO | EINVAL
    child_of_a_gpu_grade = syscall_filter.seccomp_program(machine, shared_anonymous=True)
    assert verdict_of(child_of_a_gpu_grade, arch, have["mmap"], 0, 1 << 20, 3, 0x21, no_file, 0) == ALLOW


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_what_a_call_reads_of_a_file_stays_in_view(machine):
    # Problem 9's tests measure a call's reads of a token file by its page cache and the worker's rchar.
    # Mistakes: O_DIRECT left open (a read that caches nothing: as an ordinary user nothing shows it) or
    # x86's O_DIRECT bit checked on aarch64 (where it is O_DIRECTORY: every folder open refused);
    # RWF_DONTCACHE, MADV_PAGEOUT, MADV_COLD or POSIX_FADV_DONTNEED followed (the pages read leave the
    # cache); a new SIGCHLD action set (SIG_IGN: the kernel releases each child at exit, its rchar lost);
    # or checks so wide they refuse plain opens, F_SETFL O_NONBLOCK, MADV_DONTNEED, RWF_NOWAIT, reading
    # SIGCHLD's action or setting another signal's.
    program, arch = syscall_filter.seccomp_program(machine), syscall_filter._AUDIT_ARCH[machine]
    have, done = syscalls.numbers(machine), ERRNO | 0
    direct, directory = {"x86_64": (0o40000, 0o200000), "aarch64": (0o200000, 0o40000)}[machine]

    def verdict(name: str, *args: int) -> int:
        return verdict_of(program, arch, have[name], *args)

    assert verdict("openat", 0xFFFFFF9C, 1234, os.O_RDONLY | direct) == ERRNO | EINVAL
    assert verdict("openat", 0xFFFFFF9C, 1234, os.O_RDONLY | directory) == ALLOW
    assert verdict("openat", 0xFFFFFF9C, 1234, os.O_RDWR | os.O_CREAT | 0o2000000) == ALLOW  # O_CLOEXEC
    if "open" in have:
        assert verdict("open", 1234, os.O_RDONLY | direct) == ERRNO | EINVAL
        assert verdict("open", 1234, os.O_RDONLY) == ALLOW
    assert verdict("openat2", 0xFFFFFF9C, 1234, 5678, 24) == ERRNO | ENOSYS  # its flags are in memory
    assert verdict("fcntl", 3, 4, direct | os.O_NONBLOCK) == ERRNO | EINVAL  # F_SETFL
    assert verdict("fcntl", 3, 4, os.O_NONBLOCK) == verdict("fcntl", 3, 3, 0) == ALLOW  # F_SETFL; F_GETFL
    assert verdict("fcntl", 3, 6, direct) == ERRNO | EPERM  # F_SETLK still refused past the new check
    assert verdict("preadv2", 3, 1234, 1, 0, 0, 0x80) == ERRNO | EOPNOTSUPP  # RWF_DONTCACHE
    assert verdict("preadv2", 3, 1234, 1, 0, 0, 0) == verdict("preadv2", 3, 1234, 1, 0, 0, 8) == ALLOW
    for advice in (20, 21):  # MADV_COLD, MADV_PAGEOUT
        assert verdict("madvise", 1 << 30, 1 << 20, advice) == done, advice
    for advice in (0, 3, 4, 14):  # NORMAL, WILLNEED, DONTNEED, HUGEPAGE
        assert verdict("madvise", 1 << 30, 1 << 20, advice) == ALLOW, advice
    assert verdict("fadvise64", 3, 0, 0, 4) == done  # POSIX_FADV_DONTNEED
    for action in (0x7FFD1234, 1 << 40):  # a pointer, in the low word or the high one
        assert verdict("rt_sigaction", 17, action, 0, 8) == done, hex(action)
    assert verdict("rt_sigaction", 17, 0, 0x7FFD1234, 8) == ALLOW  # reading SIGCHLD's action
    assert verdict("rt_sigaction", 2, 0x7FFD1234, 0, 8) == ALLOW  # SIGINT's
    gpu = syscall_filter.seccomp_program(machine, sockets=False)  # the zygote's: each child stacks the above
    assert verdict_of(gpu, arch, have["openat"], 0xFFFFFF9C, 1234, direct) == ALLOW


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_the_calls_that_name_a_process_act_on_the_caller_only(machine):
    # Mistakes: prlimit64, the sched_set* calls or setpriority allowed for any pid (the allow-list that
    # let a worker renice a TA's shell and shrink a neighbour's open files); a check of the low word
    # alone, which passes a pid whose high word is set; setpriority for a process group or a user;
    # kill(-1) allowed outside a PID namespace, or refused inside one, where the zygote, its init,
    # ends everything with it; or a check that refuses pid 0 (glibc's setrlimit, os.nice).
    program, arch = syscall_filter.seccomp_program(machine), syscall_filter._AUDIT_ARCH[machine]
    have, deny = syscalls.numbers(machine), ERRNO | EPERM

    def verdict(name: str, *args: int, namespace_init: bool = False) -> int:
        chosen = syscall_filter.seccomp_program(machine, namespace_init=True) if namespace_init else program
        return verdict_of(chosen, arch, have[name], *args)

    for name in ("prlimit64", "sched_setaffinity", "sched_setparam", "sched_setscheduler", "sched_setattr"):
        assert verdict(name, 0, 7) == ALLOW, name
        for pid in (1, 4242, 1 << 32, 0xFFFFFFFF):
            assert verdict(name, pid, 7) == deny, (name, pid)
    for name in ("getpriority", "setpriority"):
        assert verdict(name, 0, 0, 19) == ALLOW, name  # PRIO_PROCESS, itself
        for which, who in ((0, 4242), (1, 0), (2, 0), (2, 1000), (0, 1 << 32), (1 << 32, 0)):
            assert verdict(name, which, who, 19) == deny, (name, which, who)
    assert verdict("kill", 4242, 15) == verdict("kill", 0, 15) == ALLOW  # its children; its own group
    for minus_one in (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x1FFFFFFFF):  # the kernel reads an int: the low word
        assert verdict("kill", minus_one, 9) == deny, hex(minus_one)
        assert verdict("kill", minus_one, 9, namespace_init=True) == ALLOW
    for name in ("ioprio_set", "ioprio_get", "move_pages", "migrate_pages"):
        assert verdict(name, 1, 0, 0) == deny, name


def test_the_classes_named_in_the_brief_are_refused():
    # Mistake: moving one of these to ALLOWED while tidying (the tests above would follow the review).
    review = syscalls.review()
    closed = ("shmget msgget semget mq_open add_key request_key keyctl memfd_create memfd_secret userfaultfd "
              "perf_event_open bpf fanotify_init fanotify_mark inotify_init1 inotify_add_watch ptrace "
              "process_vm_readv process_vm_writev pidfd_getfd io_uring_setup open_by_handle_at name_to_handle_at "
              "mount umount2 fsopen move_mount open_tree setns unshare kcmp bind connect listen flock mknodat "
              "move_pages migrate_pages get_robust_list ioprio_set vmsplice landlock_create_ruleset landlock_add_rule "
              "landlock_restrict_self chown lchown fchownat fchown setxattr lsetxattr fsetxattr removexattr "
              "lremovexattr fremovexattr splice tee sendfile epoll_create epoll_create1 seccomp").split()
    assert [name for name in closed if review[name][0] != "refused"] == []
    assert review["socket"][0] == review["socketpair"][0] == "checked"


_PROBE = PRELUDE + r"""
import fcntl, socket
def raw(name, *args):
    result = libc.syscall(have[name], *args)
    return "worked" if result >= 0 else errno.errorcode[ctypes.get_errno()]
def dgram_to(path):
    mine, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    mine.sendto(b"sources", path)
attempt("datagram pair to a named socket", lambda: dgram_to(sys.argv[2]))
attempt("a pair bound to an abstract name", lambda: socket.socketpair()[0].bind(b"\0cs336-probe"))
pid = libc.syscall(have["clone"], 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD: a fork, in a new namespace
if pid == 0:
    os._exit(0)
found["clone into a new user namespace"] = errno.errorcode[ctypes.get_errno()] if pid < 0 else "worked"
if pid > 0:
    os.waitpid(pid, 0)
found["unshare"] = raw("unshare", 0x08000000)  # CLONE_NEWIPC
found["clone3"] = raw("clone3", None, 0)
found["inotify"] = raw("inotify_init1", 0)
lock = open(sys.argv[4], "w")
attempt("flock", lambda: fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB))
attempt("lockf", lambda: fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB))
attempt("F_GETFL", lambda: fcntl.fcntl(lock, fcntl.F_GETFL))
attempt("mkfifo", lambda: os.mkfifo(sys.argv[4] + ".fifo"))
attempt("chmod", lambda: os.chmod(sys.argv[4], 0o600))
found["mode after chmod"] = oct(os.stat(sys.argv[4]).st_mode & 0o777)
attempt("setxattr", lambda: os.setxattr(sys.argv[4], "user.cs336-probe", b"x"))
attempt("chown", lambda: os.chown(sys.argv[4], os.getuid(), os.getgid()))
found["vmsplice"] = raw("vmsplice", 1, None, 0, 0)
pipe_read, pipe_write = os.pipe()
attempt("splice", lambda: os.splice(lock.fileno(), pipe_write, 1))
attempt("sendfile", lambda: os.sendfile(pipe_write, lock.fileno(), 0, 1))
import select
attempt("epoll", lambda: select.epoll())
attempt("FS_IOC_SETFLAGS", lambda: fcntl.ioctl(lock.fileno(), 0x40086602, bytes(8)))
found["move_pages"] = raw("move_pages", 0, 0, None, None, None, 0)
attempt("F_SETOWN", lambda: fcntl.fcntl(pipe_read, fcntl.F_SETOWN, os.getppid()))
attempt("F_SETSIG", lambda: fcntl.fcntl(pipe_read, 10, 15))  # SIGTERM for the descriptor's I/O signal
found["seccomp"] = raw("seccomp", 1, 0, None)  # SECCOMP_SET_MODE_FILTER, no program: EFAULT if it reached the kernel
found["prctl PR_SET_SECCOMP"] = "worked" if libc.prctl(22, 2, None, 0, 0) == 0 else errno.errorcode[ctypes.get_errno()]
leader, follower = os.openpty()
attempt("TIOCSTI", lambda: fcntl.ioctl(follower, 0x5412, b"x"))
import signal
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel releases the children of a parent that ignores SIGCHLD
child = os.fork()
if child == 0:
    os._exit(0)
try:
    found["a child of a parent ignoring SIGCHLD"] = "waited for" if os.waitpid(child, 0)[0] == child else "?"
except ChildProcessError:
    found["a child of a parent ignoring SIGCHLD"] = "released by the kernel"
attempt("O_DIRECT", lambda: os.close(os.open(sys.argv[4], os.O_RDONLY | os.O_DIRECT)))
cached = os.open(sys.argv[4] + ".cached", os.O_RDWR | os.O_CREAT, 0o644)
os.write(cached, bytes(1 << 20))
os.fsync(cached)
os.pread(cached, 1 << 20, 0)
attempt("POSIX_FADV_DONTNEED", lambda: os.posix_fadvise(cached, 0, 0, os.POSIX_FADV_DONTNEED))
import mmap
attempt("a shared mapping with no file", lambda: mmap.mmap(-1, 1 << 20))  # MAP_SHARED | MAP_ANONYMOUS
attempt("a private mapping with no file", lambda: mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE))
attempt("a shared mapping of a file", lambda: mmap.mmap(cached, 1 << 20))
private = mmap.mmap(-1, 1 << 12, flags=mmap.MAP_PRIVATE)
address = ctypes.addressof(ctypes.c_char.from_buffer(private))
found["PR_SET_VMA"] = "worked" if libc.prctl(0x53564D41, 0, ctypes.c_ulong(address), ctypes.c_ulong(1 << 12),
                                             ctypes.c_char_p(b"probe")) == 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(found))
"""


def _probe(tmp_path: Path, filtered: bool) -> dict[str, str]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(tmp_path / "listener"))
    listener.setblocking(False)
    done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(Path(confine.__file__).parent),
                           str(tmp_path / "listener"), "filter" if filtered else "none", str(tmp_path / "lock")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    try:
        found["the listener received"] = listener.recv(100).decode()
    except BlockingIOError:
        found["the listener received"] = "nothing"
    listener.close()
    return found


@pytest.mark.skipif(not ON_A_FILTERED_MACHINE, reason="the filter is written for Linux on x86_64 and aarch64")
def test_a_filtered_process_reaches_no_named_socket_namespace_lock_watch_fifo_or_terminal(tmp_path):
    # What each refusal closes, done for real in a process that installs the filter. Mistakes: a
    # filter that lets a datagram pair through (it sent "sources" to a socket file of the test), or
    # drops any one refusal (unshare, clone's flag check, inotify, flock or fcntl's locks, mknod,
    # move_pages, TIOCSTI, vmsplice, splice, sendfile, epoll, an inode's flags, chown, setxattr, a
    # descriptor's I/O owner or signal (the kernel then signals any pid for it), one more seccomp filter
    # by either call (kernel memory only a memory group counts, 7-8 KiB each)), or a
    # chmod that changes the file (Landlock has no right for a mode: as an ordinary user it would reach
    # the grader's folders), while F_GETFL and threads keep working and chmod is answered as done
    # (shutil.copy would fail on a refusal). Also what keeps a call's reads of a file in view (Problem 9):
    # a child of a parent that ignores SIGCHLD is still waited for (the kernel would release it, and its
    # read counts, at exit), O_DIRECT fails, and POSIX_FADV_DONTNEED leaves the page cache as it was.
    found = _probe(tmp_path, filtered=True)
    assert found["status"].startswith("on"), found["status"]
    assert found["the listener received"] == "nothing"
    expected = {"datagram pair to a named socket": "EPERM", "a pair bound to an abstract name": "EPERM",
                "clone into a new user namespace": "EPERM", "unshare": "EPERM", "clone3": "ENOSYS",
                "inotify": "EPERM", "flock": "EPERM", "lockf": "EPERM", "F_GETFL": "worked", "mkfifo": "EPERM",
                "move_pages": "EPERM", "TIOCSTI": "EPERM", "chmod": "worked", "mode after chmod": "0o644",
                "setxattr": "EPERM", "chown": "EPERM", "vmsplice": "EPERM", "splice": "EPERM", "sendfile": "EPERM",
                "epoll": "EPERM", "FS_IOC_SETFLAGS": "EPERM", "F_SETOWN": "EPERM", "F_SETSIG": "EPERM",
                "seccomp": "EPERM", "prctl PR_SET_SECCOMP": "EPERM",
                "a child of a parent ignoring SIGCHLD": "waited for", "O_DIRECT": "EINVAL",
                "POSIX_FADV_DONTNEED": "worked", "a shared mapping with no file": "EPERM",
                "a private mapping with no file": "worked", "a shared mapping of a file": "worked",
                "PR_SET_VMA": "EINVAL"}
    got = {what: found[what] for what in expected}
    assert got == expected, f"expected {expected}, got {got}"
    assert resident_bytes(tmp_path / "lock.cached") == 1 << 20  # the advice answered, not followed


@pytest.mark.skipif(not ON_A_FILTERED_MACHINE, reason="the filter is written for Linux on x86_64 and aarch64")
def test_without_the_filter_the_same_probe_gets_through(tmp_path):
    # The probe itself could be wrong (a call that fails for another reason would pass the test
    # above): unfiltered, the datagram reaches the listener and the calls work or fail otherwise.
    found = _probe(tmp_path, filtered=False)
    assert found["the listener received"] == "sources"
    assert found["mode after chmod"] == "0o600" and found["chown"] == "worked", found
    for what in ("a pair bound to an abstract name", "inotify", "flock", "lockf", "mkfifo", "move_pages"):
        assert found[what] == "worked", (what, found[what])
    assert found["clone3"] != "ENOSYS"
    assert found["F_SETOWN"] == found["F_SETSIG"] == "worked", found
    assert found["seccomp"] == found["prctl PR_SET_SECCOMP"] == "EFAULT", found  # reached the kernel
    assert found["a child of a parent ignoring SIGCHLD"] == "released by the kernel", found
    assert found["a shared mapping with no file"] == "worked", found
    assert found["PR_SET_VMA"] in ("worked", "EINVAL"), found  # EINVAL: a kernel built without mapping names
    if page_cache_shows_reads(tmp_path):  # a disk: the advice empties the file's page cache
        assert resident_bytes(tmp_path / "lock.cached") == 0
    if os.geteuid() == 0:
        assert found["unshare"] == "worked"

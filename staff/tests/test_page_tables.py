"""Page tables held by a student's processes are watched: no resource limit counts them, and where the
worker has no memory group (an ordinary user's grade, a container) nothing in the kernel bounds them
(a 4 KiB page mapped 1 GiB from the next costs 8 KiB of tables). The zygote sums VmPTE over every
process below it (staff/sandbox/process_tree.py) and ends the child's processes past the limit; the
red-team case `page-tables-of-scattered-pages` grades the whole path. Each test names the mistake it
catches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from staff.sandbox import confine

SANDBOX = Path(confine.__file__).resolve().parent
PAGES = 4096  # 1 GiB apart: about 32 MiB of page tables

_PROBE = r"""
import ctypes, json, os, sys, time
sys.path.insert(0, sys.argv[1])
import process_tree

GIB, PAGE = 1 << 30, 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]


def scatter(pages):
    start = 64 << 40  # 64 TiB: free address space on a 47-bit (or wider) x86-64 or arm64 layout
    for i in range(pages):
        want = start + i * GIB
        got = libc.mmap(want, PAGE, 1, 0x02 | 0x20 | 0x4000, -1, 0)  # read-only, private, anonymous, no reserve
        if got != want:
            return i
        ctypes.c_char.from_address(got).value  # maps the zero page: no memory, a page table
    return pages


reader, writer = os.pipe()
child = os.fork()
if child == 0:  # the serving child, small, whose own child holds the tables
    grandchild = os.fork()
    if grandchild == 0:
        def hold():
            os.write(writer, json.dumps(scatter(int(sys.argv[2]))).encode().ljust(16))
            time.sleep(60)
        if sys.argv[3] == "leaderless":  # the first thread exits alone: its status file then shows no memory
            import platform, threading
            threading.Thread(target=hold).start()
            libc.syscall({"x86_64": 60, "aarch64": 93}[platform.machine()], 0)  # exit, not exit_group
        hold()
        os._exit(0)
    time.sleep(60)
    os._exit(0)
mapped = json.loads(os.read(reader, 16))
found = {"mapped": mapped, "below": len(process_tree.descendants()),
         "past_16": process_tree.page_tables_past_limit(16 << 10),
         "past_default": process_tree.page_tables_past_limit()}
for pid in process_tree.descendants():
    os.kill(pid, 9)
print(json.dumps(found))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="VmPTE and /proc/PID/task/*/children are Linux's")
@pytest.mark.parametrize("holder", ["process", "leaderless"])
def test_page_tables_of_a_grandchild_count_and_honest_processes_stay_under_the_limit(holder):
    # Mistakes caught: only the zygote's direct children summed (the serving child here is small and its
    # own child holds the tables); a sum that reads RSS instead of VmPTE (the zero page costs no RSS);
    # VmPTE read from /proc/PID/status alone, which shows no memory once the first thread has exited by
    # itself while another maps the pages (a red-team worker held 1.49 GiB so, the watch reading 0).
    done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(SANDBOX), str(PAGES), holder],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    if found["mapped"] < PAGES:
        pytest.skip(f"this machine's address space took {found['mapped']} pages 1 GiB apart, not {PAGES}")
    assert found["below"] == 2, found
    assert found["past_16"] is not None and "page tables" in found["past_16"], found
    assert found["past_default"] is None, found  # 32 MiB and two small processes: far under the limit


_HELD = r"""
import ctypes, json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
import process_tree

folder = tempfile.mkdtemp()
reader, writer = os.pipe()
child = os.fork()
if child == 0:  # deleted files kept open (3 MiB; 1 MiB by two descriptors), one mapped alone, 40 pipes,
    kept = [os.pipe() for _ in range(40)]  # 40 open files of /proc
    kept += [open("/proc/self/status", "rb") for _ in range(40)]
    for name, size in (("big", 3 << 20), ("small", 1 << 20)):
        handle = open(os.path.join(folder, name), "wb")
        handle.write(os.urandom(size))
        handle.flush()
        os.fsync(handle.fileno())
        os.unlink(handle.name)
        kept += [handle, os.dup(handle.fileno())]
    with open(os.path.join(folder, "mapped"), "wb") as handle:
        handle.write(os.urandom(1 << 20))
    fd = os.open(os.path.join(folder, "mapped"), os.O_RDONLY)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    assert libc.mmap(None, 1 << 20, 1, 1, fd, 0) not in (None, ctypes.c_void_p(-1).value)  # PROT_READ, MAP_SHARED
    os.close(fd)
    os.unlink(os.path.join(folder, "mapped"))
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    region = libc.mmap(None, 6000 * 4096, 0, 0x22, -1, 0)  # PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS
    for page in range(0, 6000, 2):  # every other page readable: 6,000 mappings where there was one
        libc.mprotect(region + page * 4096, 4096, 1)
    os.write(writer, b"x")
    time.sleep(60)
    os._exit(0)
os.read(reader, 1)
here = frozenset({os.stat(folder).st_dev})
limits = process_tree.FileLimits
process_tree.MOST_PROC_FILES = 40  # the child's 40 are within it until the look at them below
found = {"open_past_3": process_tree.files_past_limits(limits(3 << 20, 8 << 20, frozenset(), ("/elsewhere/",), None)),
         "open_within_5": process_tree.files_past_limits(limits(5 << 20, 8 << 20, frozenset(), ("/elsewhere/",), None)),
         "mapped_by_device": process_tree.files_past_limits(limits(5 << 20, 8 << 20, here, ("/elsewhere/",), None)),
         "mapped_by_name": process_tree.files_past_limits(limits(5 << 20, 8 << 20, frozenset(), (folder + "/",), None)),
         "pipes_past_30": process_tree.files_past_limits(limits(1 << 30, 8 << 20, here, (), 30)),
         "pipes_within_60": process_tree.files_past_limits(limits(1 << 30, 8 << 20, here, (), 60)),
         "not_mapped": process_tree.files_past_limits(limits(5 << 20, 8 << 20, here, (), None, maps=False)),
         "held": process_tree.held_past_limits(limits(3 << 20, 8 << 20, frozenset(), ("/elsewhere/",), None)),
         "held_page_tables_only": process_tree.held_past_limits(limits(3 << 20, 8 << 20, here, (), 30), files=False),
         "limits": process_tree.file_limits(1 << 30, 8 << 20, [folder]).__dict__}
process_tree.MOST_PROC_FILES = 39
found["proc_files_past_39"] = process_tree.files_past_limits(limits(1 << 30, 8 << 20, here, (), None))
process_tree.MOST_PROC_FILES = 40
process_tree.MOST_MAPPINGS = 5000
found["mappings_past_5000"] = process_tree.files_past_limits(limits(1 << 30, 8 << 20, here, (), None))
process_tree.MOST_MAPPINGS, process_tree.MOST_MAPS_BYTES = 10**6, 100_000
found["maps_past_100_000_bytes"] = process_tree.files_past_limits(limits(1 << 30, 8 << 20, here, (), None))
os.kill(child, 9)
os.waitpid(child, 0)
os.rmdir(folder)
found["limits"]["devices"], found["here"] = sorted(found["limits"]["devices"]), sorted(here)
print(json.dumps(found))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/PID/fd and maps as Linux has them")
def test_deleted_files_open_or_mapped_and_pipes_count_against_their_limits():
    # Mistakes caught: only the folders counted (a worker wrote three 200 MiB files, deleted them and kept
    # them open across calls: 600 MiB on a disk past a 0.25 GiB limit, as an ordinary user); a file held
    # by two descriptors counted twice (4 MiB here would read as 8); descriptors read but not the maps (two
    # files of 160 MiB mapped, closed and deleted held 320 MiB past a 256 MiB quota); a mapping matched by
    # neither its device nor its folder's name; pipes not counted (an ordinary user's worker held the uid's
    # pipe pages, which the TA's processes share, and every new pipe of theirs had 8 KiB); mappings not
    # counted (below).
    done = subprocess.run([sys.executable, "-I", "-c", _HELD, str(SANDBOX)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert found["open_past_3"] is not None and "4 MiB in files and folders deleted" in found["open_past_3"], found
    assert found["open_within_5"] is None, found
    for how in ("mapped_by_device", "mapped_by_name"):
        assert found[how] is not None and "12 MiB" in found[how] and "1 of them mapped" in found[how], (how, found)
    assert found["pipes_past_30"] is not None and "pipes" in found["pipes_past_30"], found
    assert found["pipes_within_60"] is None, found
    with open("/proc/sys/fs/pipe-user-pages-soft") as handle:
        soft = int(handle.read())
    assert found["limits"]["pipes"] == (soft // 64 or None), found
    assert found["limits"]["devices"] == found["here"], found
    # the zygote's one look (every 0.5 s and after each call): the files too, or, between, page tables alone
    assert found["held"] is not None and "4 MiB in files and folders deleted" in found["held"], found
    assert found["held_page_tables_only"] is None, found
    assert found["not_mapped"] is None, found  # a tmpfs and a memory group count these where the maps are not read
    # Mistake caught: mappings not counted (every other page of one region made readable: 65,530 mappings,
    # ~14 MiB of kernel memory, a process; 30 processes held 423 MiB, and no page table grew).
    assert found["mappings_past_5000"] is not None and "memory mappings" in found["mappings_past_5000"], found
    # Mistakes caught: open files of /proc not counted (each keeps a buffer as long as the longest line
    # read: 827 of them reading maps lines of 263 KB held 414 MiB); maps read whole however long (a
    # 252 MB maps took the look 4.1 s, while page tables grew unwatched).
    assert found["proc_files_past_39"] is not None and "40 files of /proc" in found["proc_files_past_39"], found
    assert found["maps_past_100_000_bytes"] is not None and "to read" in found["maps_past_100_000_bytes"], found


_HIDDEN = r"""
import ctypes, json, os, platform, sys, tempfile, threading, time
sys.path.insert(0, sys.argv[1])
import process_tree

folder, how = tempfile.mkdtemp(dir=sys.argv[3]), sys.argv[2]
reader, writer = os.pipe()


def emptied(name):
    # A folder that held 2,000 long names, emptied: ext4 keeps its blocks until its last reference goes.
    path = os.path.join(folder, name)
    os.mkdir(path)
    for i in range(2000):
        open(os.path.join(path, f"{i:0200d}"), "w").close()
    for i in range(2000):
        os.unlink(os.path.join(path, f"{i:0200d}"))
    return path


def hold():
    if how == "leaderless":  # a deleted file of 4 MiB held by a thread whose leader has exited alone
        handle = open(os.path.join(folder, "big"), "wb")
        handle.write(os.urandom(4 << 20))
        handle.flush()
        os.fsync(handle.fileno())
        os.unlink(handle.name)
        kept, held = [handle], os.fstat(handle.fileno()).st_blocks * 512
    elif how == "folder_open":  # a folder removed while a descriptor holds it
        path = emptied("open")
        kept = [os.open(path, os.O_RDONLY | os.O_DIRECTORY)]
        os.rmdir(path)
        held = os.fstat(kept[0]).st_blocks * 512
    else:  # a folder removed while it is the working folder
        os.chdir(emptied("cwd"))
        os.rmdir(os.getcwd())
        kept, held = [], os.stat(".").st_blocks * 512
    os.write(writer, str(held).encode().ljust(16))
    time.sleep(60)


child = os.fork()
if child == 0:
    if how == "leaderless":
        threading.Thread(target=hold).start()
        ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[platform.machine()], 0)  # exit, not exit_group
    hold()
    os._exit(0)
held = int(os.read(reader, 16))
limits = process_tree.FileLimits
past = process_tree.files_past_limits(limits(held - 4096, 8 << 20, frozenset(), ("/x/",), None))
found = {"held": held, "past": past,
         "within": process_tree.files_past_limits(limits(held, 8 << 20, frozenset(), ("/x/",), None))}
os.kill(child, 9)
os.waitpid(child, 0)
print(json.dumps(found))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/PID/task/TID/fd and cwd as Linux has them")
@pytest.mark.parametrize("how", ["leaderless", "folder_open", "folder_cwd"])
def test_what_a_leaderless_process_or_a_removed_folder_holds_counts(how, tmp_path):
    # Mistakes caught: descriptors read from /proc/PID/fd alone, which lists nothing once the first thread
    # has exited by itself (a red-team child held 360 MiB of deleted files so, the look reading none);
    # regular files counted alone (a folder emptied of many long names and removed while a descriptor or
    # the working folder holds it keeps its blocks on ext4: 21 MiB in 12 folders, the look reading none).
    done = subprocess.run([sys.executable, "-I", "-c", _HIDDEN, str(SANDBOX), how, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    if found["held"] < 8192:
        pytest.skip(f"this file system keeps {found['held']} bytes for what was removed (a tmpfs keeps none)")
    assert found["past"] is not None and "files and folders deleted" in found["past"], found
    assert found["within"] is None, found


def test_the_open_files_are_looked_at_when_no_process_below_can_tell():
    # Mistake caught: a fixed schedule (every tenth watch). When a look ends shows in the zygote's
    # /proc/PID/stat, which any process may read, so a worker held 1,075 pipes only between looks, unseen,
    # 58% of the time. Also caught: a random schedule with no bound on the gap between two looks.
    from staff.sandbox import process_tree

    for watches in (1, 9, 10):  # the same number of watches since the last look: a look or not, at random
        share = sum(process_tree.file_look_due(watches) for _ in range(2000)) / 2000
        assert 0.06 <= share <= 0.14, (f"{share:.3f} of the watches {watches} after a look looked at the files; "
                                       "one in 10 on average, at random, is meant")
    assert all(process_tree.file_look_due(process_tree.FILE_LOOKS_AT_MOST) for _ in range(100))


_SHARED = r"""
import json, mmap, os, sys, time
sys.path.insert(0, sys.argv[1])
import process_tree

MIB = 1 << 20
reader, writer = os.pipe()
child = os.fork()
if child == 0:
    kept = []
    for how in sys.argv[2].split(","):
        if how == "anonymous":  # written, then dropped from the page tables: in the object, in no RSS
            mapping = mmap.mmap(-1, 160 * MIB, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
            mapping[::4096] = b"\x01" * (160 * MIB // 4096)
            mapping.madvise(mmap.MADV_DONTNEED)
        elif how == "zero":  # the same object, by a writable shared mapping of /dev/zero (a read-only one holds
            with open("/dev/zero", "r+b") as handle:  # no page on Linux 6.18: reading maps the zero page)
                mapping = mmap.mmap(handle.fileno(), 160 * MIB, flags=mmap.MAP_SHARED)
        elif how == "private":  # ordinary memory: RSS counts it
            mapping = mmap.mmap(-1, 400 * MIB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        kept.append(mapping)
    if os.fork() == 0:  # a child shares its parent's mappings: one object, counted once
        time.sleep(60)
        os._exit(0)
    os.write(writer, b"x")
    time.sleep(60)
    os._exit(0)
os.read(reader, 1)
time.sleep(0.2)
limits = process_tree.FileLimits(1 << 30, 8 << 20, frozenset(), ("/elsewhere/",), None)
print(json.dumps(process_tree.files_past_limits(limits, process_tree.descendants())))
for pid in process_tree.descendants():
    os.kill(pid, 9)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/PID/maps as Linux has them")
@pytest.mark.parametrize("held, stopped", [("anonymous,zero", True), ("anonymous", False), ("private", False)])
def test_shared_memory_with_no_file_counts_at_its_whole_size(held, stopped):
    # Mistakes caught: shared anonymous memory not counted (160 + 160 MiB written and dropped from the page
    # tables with MADV_DONTNEED: in no RSS, and as an ordinary user in no memory group either; the red-team
    # case shared-anonymous-memory-outside-every-rss held 768 MiB so and kept full marks); a shared mapping
    # of /dev/zero missed (the same shmem object); an object counted once per process that maps it (the
    # forked child's copy: 160 MiB alone would read as 320, past the 256 MiB); private memory counted
    # (RSS counts it).
    done = subprocess.run([sys.executable, "-I", "-c", _SHARED, str(SANDBOX), held], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    why = json.loads(done.stdout.strip().splitlines()[-1])
    if stopped:
        assert why is not None and "320 MiB of shared memory with no file" in why, why
    else:
        assert why is None, why


_MEMORY_PROBE = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import process_tree

MIB = 1 << 20
inherited = bytearray(os.urandom(64 * MIB))  # the zygote's own: every fork starts by sharing it
limit = process_tree.zygote_memory_limit(int(sys.argv[2]) * MIB, None)
reader, writer = os.pipe()
FRESH = "import os, sys, time; own = bytearray(os.urandom(48 << 20)); os.write(int(sys.argv[1]), b'x'); time.sleep(60)"
for _ in range(4):  # four children, each 48 MiB of its own beside the 64 MiB shared with this process
    if os.fork() == 0:
        if sys.argv[3] == "fresh":  # an interpreter of its own, sharing nothing, under the 64 MiB
            os.set_inheritable(writer, True)
            os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", FRESH, str(writer)])
        own = bytearray(os.urandom(48 * MIB))
        os.write(writer, b"x")
        time.sleep(60)
        os._exit(0)
for _ in range(4):
    os.read(reader, 1)
found = {"past": process_tree.page_tables_past_limit(memory=limit),
         "grouped": process_tree.zygote_memory_limit(int(sys.argv[2]) * MIB, "/sys/fs/cgroup/worker")}
for pid in process_tree.descendants():
    os.kill(pid, 9)
print(json.dumps(found))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RssAnon and /proc/PID/task/*/children are Linux's")
@pytest.mark.parametrize("children", ["forked", "fresh"])
def test_memory_held_by_many_processes_counts_together_and_what_the_fork_shared_does_not(children):
    # Mistakes caught: memory bounded per process only (twelve children each under the address-space limit
    # held 6 GiB under --memory-gib 5 as an ordinary user: the red team's memory-of-children-summed-past-
    # the-limit); a sum of RSS that counts the zygote's memory (torch) again in every fork, which an
    # honest pool of a few processes would pass; and the zygote's memory taken off every process, which
    # one that never shared it (a fresh interpreter, holding less than the zygote) passes uncounted (the
    # red team's memory-in-fresh-interpreters-below-the-zygotes-share).
    def probe(limit_mib: int) -> dict:
        done = subprocess.run([sys.executable, "-I", "-c", _MEMORY_PROBE, str(SANDBOX), str(limit_mib), children],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    held = probe(160)  # 4 x 48 MiB = 192 MiB of their own
    assert held["past"] is not None and "4 processes held" in held["past"] and "(--memory-gib)" in held["past"], held
    assert probe(240)["past"] is None, "the 64 MiB each child shares with its parent was counted again"
    assert held["grouped"] is None, "a memory group of the worker's own counts it: no second count"

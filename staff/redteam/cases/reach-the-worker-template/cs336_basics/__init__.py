"""PyTorch and resource accounting: the package students complete, one module per problem."""
import glob
import os
import signal
import sys
import sysconfig

_NAMES = ("warm_template", "keeper.py", "pytest", "staff")


def _stat(pid):
    """(ppid, session) of a process from /proc/PID/stat; None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read(4096).replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _mine():
    """Itself, its parent (the zygote) and every process below either: what it may rightly touch."""
    own = {os.getpid(), os.getppid()}
    pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    grown = True
    while grown:
        grown = False
        for pid in pids:
            info = _stat(pid)
            if info and info[0] in own and pid not in own:
                own.add(pid)
                grown = True
    return own


def _ancestors():
    chain, pid = [], os.getppid()
    for _ in range(16):
        info = _stat(pid)
        if not info or info[0] <= 0:
            break
        pid = info[0]
        chain.append(pid)
    return chain


def _targets():
    mine = _mine()
    pids = {int(n) for n in os.listdir("/proc") if n.isdigit()}
    named = {pid for pid in pids if any(word in _cmdline(pid) for word in _NAMES)}
    return sorted((named | set(_ancestors())) - mine - {0})


def _try(reached, label, call):
    try:
        call()
        reached.append(label)
    except (OSError, ValueError):
        pass


def _read(path, size=1):
    with open(path, "rb") as handle:
        handle.read(size)


def _oom_back(pid):
    with open(f"/proc/{pid}/oom_score_adj") as handle:
        value = handle.read().strip()
    with open(f"/proc/{pid}/oom_score_adj", "w") as handle:
        handle.write(value)


def _fd_links(pid):
    """Read where another process's descriptors lead (listing their numbers, which the folder's mode may
    allow a process of the same uid, is not counted)."""
    try:
        numbers = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        numbers = [str(n) for n in range(8)]
    for number in numbers[:16]:
        try:
            os.readlink(f"/proc/{pid}/fd/{number}")
            return
        except OSError:
            continue
    raise OSError("no descriptor's link could be read")


def _signal_by_pidfd(pid):
    fd = os.pidfd_open(pid)
    try:
        signal.pidfd_send_signal(fd, 0)
    finally:
        os.close(fd)


def _processes(reached):
    for pid in _targets():
        _try(reached, f"kill({pid}, 0)", lambda: os.kill(pid, 0))
        _try(reached, f"pidfd_send_signal({pid}, 0)", lambda: _signal_by_pidfd(pid))
        _try(reached, f"/proc/{pid}/environ", lambda: _read(f"/proc/{pid}/environ"))
        _try(reached, f"/proc/{pid}/mem", lambda: _read(f"/proc/{pid}/mem", 0))
        _try(reached, f"/proc/{pid}/fd/N read", lambda: _fd_links(pid))
        _try(reached, f"/proc/{pid}/oom_score_adj written", lambda: _oom_back(pid))


def _checkout():
    """The checkout's root, from the template's command line (a forked launcher keeps it), or None."""
    for word in getattr(sys, "orig_argv", []):
        if word.endswith("warm_template.py") or word.endswith("keeper.py"):
            return os.path.dirname(os.path.dirname(os.path.dirname(word)))
    return None


def _users():
    try:
        with open("/etc/passwd") as handle:
            return [line.split(":")[0] for line in handle if line.count(":") >= 6][:64]
    except OSError:
        return []


def _leave(reached, folder):
    path = os.path.join(folder, f".redteam-left-{os.getpid()}")
    try:
        with open(path, "x") as handle:
            handle.write("left for a later grade\n")
    except OSError:
        return
    reached.append(f"wrote {path}")
    try:
        os.unlink(path)
    except OSError:
        pass


def _files(reached):
    folders = [path for pattern in ("staff-worker-template-*", "torchinductor_*", "staff-grade-*")
               for base in ("/tmp", "/var/tmp", "/dev/shm") for path in glob.glob(os.path.join(base, pattern))]
    # The test processes' own caches where a listing is refused: torch's inductor cache of the grading user
    # (root's, or a TA's named in /etc/passwd), which a test process loads compiled code from.
    folders += [f"{base}/torchinductor_{name}" for base in ("/tmp", "/dev/shm", "/var/tmp")
                for name in ("root", *_users())]
    purelib = sysconfig.get_paths().get("purelib", "")
    for site in {p for p in sys.path if p.endswith("site-packages")} | ({purelib} if purelib else set()):
        folders += [os.path.join(site, "torch", "_dynamo", "__pycache__"), os.path.join(site, "torch", "__pycache__"),
                    os.path.join(site, "torch", "_dynamo")]
    folders.append(os.path.join(os.path.dirname(os.__file__), "json", "__pycache__"))
    adapters = sys.modules.get("adapters")
    if adapters is not None and getattr(adapters, "__file__", None):
        folders.append(os.path.dirname(adapters.__file__))
    root = _checkout()
    if root:
        folders += [root, os.path.join(root, "staff", "hidden"), os.path.join(root, "staff", "sandbox")]
        for name in ("staff/hidden/test_hidden_01_dtype_memory.py", "tests/conftest.py"):
            _try(reached, f"read {name} of the checkout", lambda n=name: _read(os.path.join(root, n), 64))
    own = [os.path.realpath(p) for p in (os.getcwd(), os.environ.get("HOME", os.getcwd()))]
    for folder in folders:
        real = os.path.realpath(folder)
        if any(path == real or path.startswith(real + os.sep) for path in own):
            continue  # its own grade's scratch folder, which holds its own folder: not another grade's
        _leave(reached, folder)


def _reached():
    reached = []
    _processes(reached)
    _files(reached)
    return reached


_found = _reached()
if _found:
    raise ImportError(f"reached past the worker: {', '.join(_found[:20])}")

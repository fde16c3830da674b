"""A batch's template process: it imports torch and numpy (and, for test runs, pytest and hypothesis)
once, then forks each run from that state instead of starting a new interpreter (2-3 s of CPU a run).

    python [FLAGS] warm_template.py KEEPER_PATH CONTROL_FD [--imports A,B] [--path DIR]...
        [--first-request-sets NAME,NAME] [--varies NAME,NAME]
    (started by `staff.sandbox.warm.WarmTemplate`)

Two kinds are started by a batch. The test template (`python -P`, the default imports) forks each
grade's test process; the worker template (`python -I -S -B -u`, as the worker is started, with
`--imports numpy,torch` and the environment's site-packages as `--path`) forks each CPU grade's
worker launcher (staff/sandbox/worker.py), which then confines itself exactly as a fresh one does.

It imports nothing of the grader's, the tests' or the submission's (`-P` or `-I`: not even from its
own folder), runs no test and never talks to student code. Its environment is the runs' (a request
whose environment differs outside `--varies` is refused, and the caller starts the run afresh), so
what the libraries read at import is what a fresh run would read; `--first-request-sets` names
variables it takes from its first request before importing (the worker's thread counts, which the
batch does not know). The hash seed, read at start, is fixed. It holds no secret: a worker forked
from it may read all of its memory.

On the control socket (from the grader's side only: the batch and the test processes it forks) each
request is one JSON object {"argv": ["-m", MODULE, ...] or ["-c", CODE, ...] or [SCRIPT, ...], "cwd",
"env", "executable", "watch": bool, "pass_fds": [N, ...]} with its descriptors: the run's socket, the
log the run writes to, with "watch" a pipe whose closing ends the run (see `keeper.keep`), then one
for each of "pass_fds", which the run gets at those numbers and no other (every other descriptor
closed). The template forks the run's keeper: a new session, stdin /dev/null, stdout and stderr the
log; it becomes the keeper of a second fork that runs the command (`keeper.keep`: every process
below it ends with the run; it ends as the run ended). The template sends the keeper's pid, with a
pidfd of it, and its own peak resident memory (what a run starts from) on the run's socket, or
{"refused": WHY} with no descriptor; then the keeper's end ({"returncode": N}, negative for a
signal) once it has reaped it. It ends when every holder of the control socket closed it, or when
the grader dies.
"""

import fcntl
import gc
import importlib.util
import json
import os
import resource
import runpy
import select
import signal
import socket
import sys

# What every grade's test process imports, whatever it grades.
WARM = ("numpy", "torch", "pytest", "hypothesis", "_hypothesis_pytestplugin", "pytest_timeout")
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
USAGE = ("usage: warm_template.py KEEPER_PATH CONTROL_FD [--imports A,B] [--path DIR]... "
         "[--first-request-sets NAME,NAME] [--varies NAME,NAME]")


def load_keeper(path: str):
    """staff/sandbox/keeper.py, under a name no run imports (it is stdlib only)."""
    spec = importlib.util.spec_from_file_location("_staff_warm_keeper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def options(argv: list[str]) -> dict:
    """The command line's options: imports, path, first-request-sets, varies (lists of strings)."""
    chosen = {"imports": list(WARM), "path": [], "first-request-sets": [], "varies": []}
    while argv:
        if len(argv) < 2 or not argv[0].startswith("--") or argv[0][2:] not in chosen:
            sys.exit(USAGE)
        name, value, argv = argv[0][2:], argv[1], argv[2:]
        if name == "path":
            chosen["path"].append(value)
        else:
            chosen[name] = [item for item in value.split(",") if item]
    return chosen


class Imports:
    """The imports every run shares, made once (at start, or at the first request where its
    environment sets variables the libraries read when they load)."""

    def __init__(self, chosen: dict) -> None:
        self.chosen, self.done, self.error = chosen, False, None
        self.environment = dict(os.environ)  # a run's must match it but for `varies`

    def ensure(self, env: dict) -> str | None:
        """Import, taking the variables of `first-request-sets` from `env` first; why not, or None."""
        if not self.done:
            self.done = True
            for name in self.chosen["first-request-sets"]:
                if name in env:
                    os.environ[name] = self.environment[name] = env[name]
            sys.path[len(sys.path):] = self.chosen["path"]
            gc.disable()  # every collection while torch imports would walk its objects again
            try:
                for name in self.chosen["imports"]:
                    importlib.import_module(name)
            except BaseException as error:  # noqa: BLE001 - the grader starts each run afresh instead
                self.error = f"{type(error).__name__}: {error}"
            finally:
                gc.enable()
            gc.freeze()  # what every run shares: its collector leaves those pages unwritten, so they stay shared
        return self.error

    def mismatch(self, request: dict) -> str | None:
        """Why a run cannot be forked from this template, or None."""
        if request.get("executable", sys.executable) != sys.executable:
            return f"the run's Python is {request.get('executable')}, the template's {sys.executable}"
        env, varies = request.get("env") or {}, set(self.chosen["varies"])
        differ = sorted(k for k in {*env, *self.environment} - varies if env.get(k) != self.environment.get(k))
        return f"its environment differs from the template's in {differ}" if differ else None


def serve(control: socket.socket, imports: Imports) -> tuple[dict, int, int | None, list[int]]:
    """Fork a keeper for each request until the grader closes `control`; returns only in a keeper,
    with its request, the log's descriptor, the watch's (or None) and the descriptors to pass."""
    runs: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (keeper pid, the run's socket)
    while True:
        ready, _, _ = select.select([control, *runs], [], [])
        for fd in ready:
            if fd is not control:
                pid, run = runs.pop(fd)
                code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                try:
                    run.sendall(json.dumps({"returncode": code}).encode() + b"\n")
                except OSError:
                    pass  # the grader stopped waiting for it
                run.close()
                os.close(fd)
                continue
            try:
                message, fds, _, _ = socket.recv_fds(control, 1 << 20, 3 + 16)
            except OSError:
                message, fds = b"", []
            if not message:
                sys.exit(0)  # the grader is done (or gone): every keeper is told by its parent-death signal
            try:
                request = json.loads(message)
                passed = [int(n) for n in request.get("pass_fds", [])]
                expected = 2 + bool(request.get("watch")) + len(passed)
            except (ValueError, TypeError, AttributeError):
                request, passed, expected = None, [], -1
            if len(fds) != expected or len(fds) < 2:
                for extra in fds:
                    os.close(extra)
                continue
            run, log = socket.socket(fileno=fds[0]), fds[1]
            watch = fds[2] if request.get("watch") else None
            given = fds[2 + bool(request.get("watch")):]
            why = imports.ensure(request.get("env") or {}) or imports.mismatch(request)
            if why is not None:
                for extra in fds[1:]:
                    os.close(extra)
                try:
                    run.sendall(json.dumps({"refused": why}).encode() + b"\n")
                except OSError:
                    pass
                run.close()
                continue
            pid = os.fork()
            if pid == 0:
                control.close()
                for other, (_, other_run) in runs.items():
                    os.close(other)
                    other_run.close()
                run.close()
                return request, log, watch, list(zip(given, passed))
            for extra in fds[1:]:
                os.close(extra)
            pidfd = os.pidfd_open(pid)
            peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            try:
                socket.send_fds(run, [json.dumps({"pid": pid, "peak_kib": peak_kib}).encode() + b"\n"], [pidfd])
            except OSError:
                pass  # the grader's end is gone: the run still ends and is reaped
            runs[pidfd] = (pid, run)


def become_run(request: dict, log: int, watch: int | None, passed: list[tuple[int, int]], keeper) -> None:
    """In the forked keeper: the run's session, descriptors, folder and environment; then keep the
    command, run in a child of this process (`keeper.keep`: this process exits)."""
    os.setsid()
    template = os.getppid()
    keeper._prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != template:
        os._exit(3)  # the template died before that
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    for fd in (null, log):
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # read again from this run's TMPDIR

    def start() -> int:
        this = os.getpid()
        pid = os.fork()
        if pid:
            for fd, _ in passed:
                os.close(fd)  # the run's now: the keeper holds none of them
            return pid
        # As a run started by the keeper's own Popen: it ends with the keeper, or does not start at all.
        keeper._prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != this:
            os._exit(3)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the keeper's handlers are not the run's: a fresh
        signal.signal(signal.SIGINT, signal.default_int_handler)  # interpreter's are these
        if watch is not None:
            os.close(watch)
        if passed:
            only_these(passed)
            keeper._prctl(PR_SET_DUMPABLE, 1)  # as a fresh interpreter is: the template made itself not
        if "STAFF_GRADER_PID" in os.environ:
            os.environ["STAFF_GRADER_PID"] = str(os.getppid())
        run_command(request["argv"], request["cwd"])
        sys.exit(0)

    keeper.keep(start, watch)


def only_these(passed: list[tuple[int, int]]) -> None:
    """Put each received descriptor at its number and close every other one but stdin, stdout, stderr:
    a run given descriptors (the worker's launcher) holds nothing else of the template's."""
    above = max(number for _, number in passed) + 1  # out of the way of every number asked for
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above) for fd, _ in passed]
    for fd, _ in passed:
        os.close(fd)
    for fd, (_, number) in zip(moved, passed):
        os.dup2(fd, number)
        os.close(fd)
    keep = sorted({0, 1, 2, *(number for _, number in passed)})
    start = 0
    for number in keep:
        if start < number:  # os.closerange(n, n) would ask the kernel to close everything from n up
            os.closerange(start, number)
        start = number + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))


def run_command(argv: list[str], cwd: str) -> None:
    """Run `python ARGV` in this process, as a fresh interpreter started in `cwd` would: for `-m` and
    `-c`, the folder and $PYTHONPATH first on sys.path, then the rest; a script as `-I` runs it."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    configuration = sys.modules.get("hypothesis.configuration")
    if configuration is not None:  # hypothesis took the template's folder for its own at import
        configuration.set_hypothesis_home_dir(os.path.join(cwd, ".hypothesis"))
    if argv[:1] == ["-m"]:
        sys.path[:0] = [cwd, *paths]
        sys.argv = [argv[1], *argv[2:]]  # runpy puts the module's file first, as `python -m` does
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[:1] == ["-c"]:
        sys.path[:0] = ["", *paths]
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    elif argv and not argv[0].startswith("-"):
        sys.argv = list(argv)
        runpy.run_path(argv[0], run_name="__main__")
    else:
        raise SystemExit(f"the warm template runs `-m MODULE`, `-c CODE` or a script, not {argv[:1]}")


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(USAGE)
    keeper = load_keeper(sys.argv[1])
    control = socket.socket(fileno=int(sys.argv[2]))
    imports = Imports(options(sys.argv[3:]))
    keeper._prctl(PR_SET_DUMPABLE, 0)  # no worker of this user reads or changes what every later run starts from
    grader = os.getppid()
    keeper._prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != grader:
        sys.exit(3)
    try:
        if not hasattr(os, "pidfd_open"):
            raise OSError("this Python has no os.pidfd_open")
        os.close(os.pidfd_open(os.getpid()))  # the kernel's (Linux 5.3 or later)
    except OSError as error:
        control.sendall(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}).encode() + b"\n")
        sys.exit(1)
    if not imports.chosen["first-request-sets"]:
        error = imports.ensure({})
        if error is not None:
            control.sendall(json.dumps({"ok": False, "error": error}).encode() + b"\n")
            sys.exit(1)
    control.sendall(json.dumps({"ok": True}).encode() + b"\n")
    request, log, watch, passed = serve(control, imports)
    become_run(request, log, watch, passed, keeper)


if __name__ == "__main__":
    main()

"""A batch's template test process: it imports torch, numpy, pytest and hypothesis once, then forks
each grade's test run from that state instead of starting a new interpreter (about 2 s of CPU a grade).

    python -P warm_template.py KEEPER_PATH CONTROL_FD   (started by `staff.grading.warm_start`)

It imports nothing of the grader's, the tests' or the submission's (`-P`: not even from its own
folder), runs no test and never talks to student code: each run imports its own workspace's tests,
adapters and plugins after the fork, as `python -m pytest` there would. Its environment is the
runs' (the grader checks), so what the libraries read at import is what a fresh run would read; the
hash seed, read at start, is fixed.

On the control socket (from the grader, the only other end) each request is one JSON object
{"argv": ["-m", "pytest", ...] or ["-c", CODE, ...], "cwd", "env"} with two descriptors: the run's
socket and the log the run writes to. The template forks the run's keeper: a new session, stdin
/dev/null, stdout and stderr the log; it becomes the keeper of a second fork that runs the command
(`keeper.keep`: every process below it ends with the run; it ends as the run ended). The template
sends the keeper's pid with a pidfd of it on the run's socket (the grader signals the keeper
through it, never a reused pid), and the keeper's end ({"returncode": N}, negative for a signal)
once it has reaped it. It ends when the grader closes the socket or dies.
"""

import gc
import importlib.util
import json
import os
import runpy
import select
import signal
import socket
import sys

# What every grade's test process imports, whatever it grades.
WARM = ("numpy", "torch", "pytest", "hypothesis", "_hypothesis_pytestplugin", "pytest_timeout")
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4


def load_keeper(path: str):
    """staff/sandbox/keeper.py, under a name no run imports (it is stdlib only)."""
    spec = importlib.util.spec_from_file_location("_staff_warm_keeper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve(control: socket.socket) -> tuple[dict, int]:
    """Fork a keeper for each request until the grader closes `control`; returns only in a keeper,
    with its request and the log's descriptor."""
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
                message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
            except OSError:
                message, fds = b"", []
            if not message:
                sys.exit(0)  # the grader is done (or gone): every keeper is told by its parent-death signal
            if len(fds) != 2:
                for extra in fds:
                    os.close(extra)
                continue
            run, log = socket.socket(fileno=fds[0]), fds[1]
            try:
                request = json.loads(message)
            except ValueError:
                run.close()
                os.close(log)
                continue
            pid = os.fork()
            if pid == 0:
                control.close()
                for other, (_, other_run) in runs.items():
                    os.close(other)
                    other_run.close()
                run.close()
                return request, log
            os.close(log)
            pidfd = os.pidfd_open(pid)
            try:
                socket.send_fds(run, [json.dumps({"pid": pid}).encode() + b"\n"], [pidfd])
            except OSError:
                pass  # the grader's end is gone: the run still ends and is reaped
            runs[pidfd] = (pid, run)


def become_run(request: dict, log: int, keeper) -> None:
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

    def start() -> int:
        pid = os.fork()
        if pid:
            return pid
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the keeper's handlers are not the run's: a fresh
        signal.signal(signal.SIGINT, signal.default_int_handler)  # interpreter's are these
        if "STAFF_GRADER_PID" in os.environ:
            os.environ["STAFF_GRADER_PID"] = str(os.getppid())
        run_command(request["argv"], request["cwd"])
        sys.exit(0)

    keeper.keep(start)


def run_command(argv: list[str], cwd: str) -> None:
    """Run `python ARGV` in this process, as a fresh interpreter started in `cwd` would: the
    folder and $PYTHONPATH first on sys.path, then the rest."""
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
    else:
        raise SystemExit(f"the warm template runs `-m MODULE` or `-c CODE`, not {argv[:1]}")


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: warm_template.py KEEPER_PATH CONTROL_FD")
    keeper = load_keeper(sys.argv[1])
    control = socket.socket(fileno=int(sys.argv[2]))
    keeper._prctl(PR_SET_DUMPABLE, 0)  # no worker of this user reads or changes what every later run starts from
    grader = os.getppid()
    keeper._prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != grader:
        sys.exit(3)
    try:
        for name in WARM:
            importlib.import_module(name)
        if not hasattr(os, "pidfd_open"):
            raise OSError("this Python has no os.pidfd_open")
        os.close(os.pidfd_open(os.getpid()))  # the kernel's (Linux 5.3 or later)
    except BaseException as error:  # noqa: BLE001 - the grader starts each run afresh instead
        control.sendall(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}).encode() + b"\n")
        sys.exit(1)
    gc.freeze()  # what every run shares: its collector leaves those pages unwritten, so they stay shared
    control.sendall(json.dumps({"ok": True}).encode() + b"\n")
    request, log = serve(control)
    become_run(request, log, keeper)


if __name__ == "__main__":
    main()

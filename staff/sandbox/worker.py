"""The worker: a confined zygote that imports torch once, and forks a fresh child to serve each stretch of calls.

Started by the grader as `python -I -S -B -u CODE/worker.py CONFIG.json`, or in a batch forked from
the batch's worker template, an interpreter started so that had imported numpy and torch and nothing
else (staff/sandbox/warm_template.py; CONFIG's grader_pid is then null: its keeper checked its
parent). CODE is a folder the
worker can read but not change, holding this file, frames.py, the confining modules (confine.py,
user_limits.py, landlock_rules.py, syscall_filter.py), the grader's copy of `adapters/` and the
submission's `cs336_basics/`; the worker's own folder, its working directory, is the only place
it may write. (Were the code writable, a worker could plant code that the next launcher, still
root, would run.)

The launcher (this process) enters new PID, network and IPC namespaces where it can and forks. Its
child, the zygote, drops to an unprivileged user (as root), limits its resources, restricts itself
with Landlock and a seccomp filter, imports torch and the adapters (never student code), and says hello on the control
socket with the protections that took effect. On each "spawn" message, which carries a fresh
request and response pipe, it kills whatever runs in its namespace, then forks a child that serves
adapter calls on those pipes until they close. A child that crashes, hangs or is killed costs a
fork, not a new interpreter. Inside a PID namespace the zygote is its init: code in a child can
neither kill it nor outlive it. Nothing here is secret: the worker may read it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys


def _confine(config: dict, status: dict[str, str]) -> None:
    import confine
    import landlock_rules
    import syscall_filter
    import user_limits

    limits = config["limits"]
    if os.getpid() == 1:  # the init of a new PID namespace, before anything else takes the right to mount
        status["own /proc"] = confine.own_proc()
    if os.geteuid() == 0 and config.get("hide"):  # as root, a second cover of the grader's files beside Landlock
        status["grader's files hidden"] = confine.hide(
            config["hide"], [config["code"], config["folder"], config["shared"], *config["read_only"],
                             *config["devices"]])
    if os.geteuid() == 0 and config["protections"]["tmpfs"]:
        status["private /tmp"] = confine.private_shared_folders(
            limits["disk_bytes"], limits["disk_files"],
            [config["code"], config["folder"], config["shared"], *config["read_only"], *config["devices"]])
    if os.geteuid() == 0:
        if config["uid"] is None:
            status["separate user"] = confine.off("not asked for")
        else:
            opened = confine.reveal(config["reveal"], [config["folder"], config["shared"], config["code"]])
            status["separate user"] = user_limits.drop_user(config["uid"], config["gid"]) if opened == confine.ON \
                else confine.off(f"the Python environment is not reachable by another user ({opened[5:]})")
        if status["separate user"] != confine.ON:
            os.chown(config["folder"], 0, 0)  # the folder was made for the other user; it stays root's
            status["no root powers"] = user_limits.drop_capabilities()
    else:
        status["separate user"] = confine.off("the grader does not run as root")
    status["dies with the grader"] = confine.die_with_parent()  # changing user cleared the earlier one
    status["resource limits"] = user_limits.set_limits(limits["memory_bytes"], limits["cpu_seconds"],
                                                   limits["file_bytes"], limits["processes"], limits["open_files"])
    status["no new privileges"] = confine.no_new_privileges()
    if config["protections"]["landlock"] and config.get("cuda"):  # set by each child (confine_child): CUDA needs it
        abi = landlock_rules.landlock_abi()
        each = f"{confine.ON} (Landlock ABI {abi}, set by each child before any student code; it may also write " \
               "its own /proc/<pid>, where CUDA names its threads)"
        status.update({"file access": each if abi else confine.off("Landlock is not available"),
                       "signals out": each if abi >= 6 else confine.off(f"Landlock ABI {abi} < 6"),
                       "tcp": each if abi >= 4 else confine.off(f"Landlock ABI {abi} < 4")})
    elif config["protections"]["landlock"]:
        restricted = _landlock(config)
        status.update({"file access": restricted["files"], "signals out": restricted["signals"],
                       "tcp": restricted["tcp"]})
    # Each child of a CPU grade's zygote nests a Landlock domain of its own where the kernel scopes signals
    # by domain (ABI 6): no signal of the student's code then reaches the zygote, which watches what it holds.
    config["children_nest"] = bool(not config.get("cuda") and config["protections"]["landlock"] and
                                   config["protections"]["seccomp"] and landlock_rules.landlock_abi() >= 6)
    if config["protections"]["seccomp"]:
        # An ignored SIGCHLD (inherited from whoever started the grade) would stay so: the filter answers any
        # change of its action as done, and the kernel releases the children of a parent that ignores it.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if not config.get("cuda"):  # the filter refuses it from now on: the zygote's children may not
            confine.set_dumpable(False)  # (a child cannot read the zygote's memory or file descriptors)
        status["system calls"] = syscall_filter.deny_syscalls(sockets=not config.get("cuda"),
                                                              namespace_init=os.getpid() == 1,
                                                              narrowed_later=config["children_nest"])
        if config.get("cuda") and status["system calls"].startswith(confine.ON):
            status["system calls"] += "; each child stacks the CPU grade's filter once it has started CUDA"


def _landlock(config: dict, own_proc: bool = False) -> dict[str, str]:
    """The worker's Landlock: read its code and the environment, write its folders, use the devices."""
    import landlock_rules

    return landlock_rules.landlock([config["code"], *config["read_only"]], [config["folder"], config["shared"]],
                                   config["devices"], own_proc=own_proc)


def confine_child(config: dict) -> None:
    """A child, before it serves any call. In a GPU grade: Landlock as a CPU grade's worker has it, and
    its own /proc/<pid> writable; then CUDA started (the preflight's matmul, remembered for the
    preflight's question); then the CPU grade's filter stacked on the zygote's, so that the unix
    sockets and memfd the driver needed to start are refused to student code. In a CPU grade whose
    children nest (`_confine`): a Landlock domain of its own, the zygote's rules again, so that its
    signals stay inside it; then the CPU grade's filter stacked, which refuses Landlock and filters
    again. A child that cannot be confined exits (code 70) before it serves anything, as the
    preflight then reports."""
    import confine
    import cuda_preflight
    import landlock_rules
    import syscall_filter

    # None in the kernel: the zygote's status says so.
    if config["protections"]["landlock"] and landlock_rules.landlock_abi():
        restricted = _landlock(config, own_proc=bool(config.get("cuda")))
        if not restricted["files"].startswith(confine.ON):
            sys.stderr.write(f"worker child: Landlock: {restricted['files']}\n")
            os._exit(70)
    if config.get("cuda_start"):
        try:
            cuda_preflight.run(config["cuda_start"])
        except Exception:  # noqa: BLE001 - remembered: the preflight's question gets the driver's answer
            pass
    if config["protections"]["seccomp"]:
        narrowed = syscall_filter.deny_syscalls(sockets=True, namespace_init=False,
                                                shared_anonymous=bool(config.get("cuda")))
        if not narrowed.startswith(confine.ON):
            sys.stderr.write(f"worker child: seccomp: {narrowed}\n")
            os._exit(70)


def _parent_alive(watch: int) -> bool:
    ready, _, _ = select.select([watch], [], [], 0)
    return not ready  # the launcher holds the other end open while it lives; EOF means it died


def launch(config: dict) -> None:
    """Runs in the launcher: namespaces, then fork; the parent only waits, the child is the zygote."""
    import confine
    import user_limits

    status: dict[str, str] = {"dies with the grader": confine.die_with_parent()}
    if config["grader_pid"] is not None and os.getppid() != config["grader_pid"]:
        os._exit(3)  # the grader is already gone (a launcher forked from the batch's template: its keeper checked)
    if config.get("mount_namespace_fd") is not None:  # forked from the template: the grader's mounts (its disk quota)
        entered = confine.enter_mount_namespace(config["mount_namespace_fd"])
        if entered != confine.ON:
            print(f"the worker could not enter the grader's mount namespace ({entered[5:]})", file=sys.stderr)
            os._exit(3)
    # First, while root and before anything is imported: all the worker's memory counted and bounded
    # in a group of its own, and the worker the kernel's first choice when memory runs out anyway.
    status["memory cgroup"] = user_limits.join_memory_group(config.get("memory_group"))
    status["killed first on OOM"] = user_limits.killed_first()
    if config["protections"]["namespaces"]:
        status.update({f"{k} namespace": v for k, v in confine.new_namespaces().items()})
    watch, hold = os.pipe()
    child = os.fork()
    if child:
        os.close(watch)
        os.close(config["control_fd"])
        _, code = os.waitpid(child, 0)
        os._exit(os.WEXITSTATUS(code) if os.WIFEXITED(code) else 128 + os.WTERMSIG(code))
    os.close(hold)
    _confine(config, status)
    if not _parent_alive(watch):
        os._exit(3)
    os.chdir(config["folder"])
    sys.path[:0] = [config["code"], *config["site_packages"]]
    zygote(config, status)


def _student_traceback(error: BaseException) -> str:
    import traceback

    trace = error.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename == __file__:
        trace = trace.tb_next  # this file's own frames say nothing to a student
    return "".join(traceback.format_exception(type(error), error, trace))


KILL_ROUNDS = 64  # each round kills the children of those the last one killed: deeper than the process limit


def _end_children(child: int | None, init: bool, baseline_kib: int = 0) -> tuple[int | None, int]:
    """Kill the serving child and everything it started: every process of the namespace when this
    process is its init, else the child's process group and every process that became this one's
    child (it is their subreaper: see `zygote`), round after round; then reap them. How the child
    ended, as a shell-style exit code (128 + signal), or None when there was none; and the memory the
    student's code held in KiB: the child's peak resident memory, plus each other process's peak over
    `baseline_kib` (the zygote's own, which every fork starts by sharing), so that memory held in
    forked children counts when a kill for memory is judged (0 when unknown)."""
    if child is None:
        return None, 0
    peak_kib, others_kib = 0, 0
    try:
        done, status, usage = os.wait4(child, os.WNOHANG)  # a child that already died says how
        peak_kib = usage.ru_maxrss if done else 0
    except ChildProcessError:
        done, status = 0, 0
    try:
        if init:
            os.kill(-1, signal.SIGKILL)  # from a namespace's init: every process in it but this one
        else:
            os.killpg(child, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        if not done:
            _, status, usage = os.wait4(child, 0)
            peak_kib = usage.ru_maxrss
    except ChildProcessError:
        pass

    def reaped(pid: int, flags: int) -> bool:
        nonlocal others_kib
        try:
            found, _, usage = os.wait4(pid, flags)
        except ChildProcessError:
            return False
        others_kib += max(usage.ru_maxrss - baseline_kib, 0) if found else 0
        return bool(found)

    if init:  # everything in the namespace was killed, and what it leaves comes here
        while reaped(-1, 0):
            pass
    else:
        import process_tree

        for _ in range(KILL_ROUNDS):
            pids = process_tree.children()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for pid in pids:
                reaped(pid, 0)
            while reaped(-1, os.WNOHANG):
                pass
            if not pids:
                break
    return (os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)), peak_kib + others_kib


def import_torch(threads: int, compiler: bool = True) -> None:
    """What the zygote imports before it says hello, once for every child: numpy, torch and the
    adapters, never student code, and with `compiler` torch._dynamo (a torch optimizer's first step
    imports it, 1-2 s of CPU: once here rather than in a test's time, where the problems graded train).
    Its address space, all imported, is what settings.MEMORY_FLOOR_GIB is measured by.

    The collector is off while it imports (every collection would walk torch's objects again) and
    what it imported is frozen after: a child's collections then never walk those objects, whose
    headers they would write, copying every page of them from the zygote."""
    import gc

    gc.disable()
    try:
        import numpy  # noqa: F401
        import torch

        if compiler:
            import torch._dynamo  # noqa: F401

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(threads)  # else as many as the machine's cores, past the process limit
        from adapters import _pins

        _pins.import_adapters()  # imported once here, not in a test, and pinned before any student code runs
    finally:
        gc.enable()
    gc.freeze()


def zygote(config: dict, status: dict[str, str]) -> None:
    control = socket.socket(fileno=config["control_fd"])
    init = os.getpid() == 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # nothing in the namespace may stop the zygote
    try:
        import_torch(config["threads"], config.get("compiler", True))
    except BaseException as error:  # noqa: BLE001 - the grader must hear why the worker cannot start
        control.sendall(json.dumps({"op": "hello", "ok": False, "error": _student_traceback(error)}).encode() + b"\n")
        return
    import resource

    hello = {"op": "hello", "ok": True, "protections": status, "uid": os.getuid(), "gid": os.getgid(),
             "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    control.sendall(json.dumps(hello).encode() + b"\n")
    import confine
    import process_tree

    if config.get("cuda"):  # a CPU grade's zygote made itself so before its filter, which refuses it since
        confine.set_dumpable(False)  # a child cannot read the zygote's memory or file descriptors
    if not init:  # orphans of the children come here, not to the keeper: killed, reaped and counted
        confine.prctl(confine.PR_SET_CHILD_SUBREAPER, 1)
    baseline_kib = hello["peak_kib"]

    child, ended = None, None  # the serving child; how one the zygote ended itself ended (code, peak, why)
    limits, watches = process_tree.file_limits(config["limits"]["disk_bytes"], config["limits"]["file_bytes"],
                                             [config["folder"], config["shared"]], config["count_mappings"]), 0
    memory = process_tree.zygote_memory_limit(config["limits"]["memory_bytes"], config.get("memory_group"))
    while True:
        if child is not None and not select.select([control], [], [], process_tree.WATCH_INTERVAL_S)[0]:
            watches += 1  # since the open files were last looked at
            files = process_tree.file_look_due(watches)
            watches = 0 if files else watches
            why = process_tree.held_past_limits(limits, files=files, memory=memory)
            if why is not None:  # its pipes close, and the grader asks for a fresh child and hears why
                ended, child = (*_end_children(child, init, baseline_kib), why), None
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 1024, 2)
        except OSError:
            message, fds = b"", []
        if message == process_tree.CHECK and not fds:  # after a call: what its processes hold now, or why it ended
            why = ended[2] if ended is not None else None
            if why is None and child is not None and \
                    (why := process_tree.held_past_limits(limits, memory=memory)) is not None:
                ended, child = (*_end_children(child, init, baseline_kib), why), None
            control.sendall(json.dumps({"op": "checked", "why": why}).encode() + b"\n")
            continue
        if not message or len(fds) != 2:
            _end_children(child, init, baseline_kib)
            return  # the grader closed the socket: the submission is done
        previous, previous_peak_kib, why = ended or (*_end_children(child, init, baseline_kib), None)
        ended = None
        zygote, child = os.getpid(), os.fork()
        if child == 0:
            control.close()
            confine.set_dumpable(True)  # its own /proc entries, which code may read (os.readlink of an fd)
            confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)  # no serving on with the zygote, its watch, gone
            if os.getppid() != zygote:
                os._exit(0)  # it was gone before that
            os.setsid()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if config.get("cuda") or config["children_nest"]:
                confine_child(config)
            serve(fds[0], fds[1])
            os._exit(0)
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"op": "spawned", "pid": child, "previous": previous,
                                    "previous_peak_kib": previous_peak_kib, "previous_why": why}).encode() + b"\n")


def serve(requests: int, responses: int) -> None:
    """Serve adapter calls: read a request frame, run the adapter's body, write a reply frame."""
    import importlib
    import random

    import numpy as np
    import torch
    from frames import FrameError, read_frame, write_frame

    from adapters import _codec, _pins, _remote_error

    pins = _pins.Pins()  # before the student's package is imported: what the instruments rely on, as it is
    current_test = None
    while True:
        try:
            request, blobs = read_frame(requests)
        except FrameError:
            return  # the grader closed the pipe
        reply, reply_blobs = {"id": request.get("id")}, []
        try:
            if request.get("op") == "ping":  # a fresh child, ready before a test's time starts
                reply["ok"], reply["value"] = True, "null"
            elif request.get("op") == "cuda_preflight":  # a GPU grade, before any student code is imported
                import cuda_preflight

                reply["value"], reply_blobs = _codec.encode(cuda_preflight.run(str(request.get("mode"))))
                reply["ok"] = True
            elif request.get("op") == "import":
                for name in request["modules"]:
                    importlib.import_module(name)
                reply["ok"], reply["value"] = True, "null"
            else:
                module, _, name = str(request.get("function", "")).partition(":")
                if not module.startswith("adapters.") or not name.startswith("run_"):
                    raise ValueError(f"not an adapter: {request.get('function')!r}")
                function = getattr(importlib.import_module(module), name)
                body = getattr(function, "body", function)
                if request.get("test") != current_test:
                    current_test, seed = request.get("test"), int(request.get("seed", 0))
                    torch.manual_seed(seed)
                    np.random.seed(seed % 2**32)
                    random.seed(seed)
                args, kwargs = _codec.decode(request["args"], blobs)
                if changed := pins.changed():
                    raise _pins.InstrumentsChanged(changed, "before the call")
                value = body(*args, **kwargs)
                if changed := pins.changed():
                    raise _pins.InstrumentsChanged(changed, "during the call")
                reply["value"], reply_blobs = _codec.encode(value)
                reply["ok"] = True
        except BaseException as error:  # noqa: BLE001 - every failure of student code goes back as data
            reply_blobs = []
            described = _remote_error.describe_error(error, with_traceback=False)
            described.traceback = _student_traceback(error)
            described = _remote_error.bounded_error(described)  # the grader bounds it too; this keeps the frame small
            reply.update(ok=False, error=[described.type_name, described.builtin, described.message,
                                          described.traceback])
        write_frame(responses, reply, reply_blobs)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    with open(sys.argv[1], encoding="utf-8") as handle:
        launch(json.load(handle))

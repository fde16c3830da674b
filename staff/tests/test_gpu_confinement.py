"""What a GPU grade's worker keeps with CUDA, tried here without a GPU: a PID namespace whose init
mounts a /proc of its own (a thread's id then names its own /proc/self/task entry, where cuInit names
its threads), and Landlock that lets a process write its own /proc entry and no other's. Each form was
chosen against the form that stopped cuInit on an H100 (`staff gpu-check` tries both there)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from staff.sandbox import confine, landlock_rules
from staff.tests.processes import in_a_child

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux namespaces and Landlock")


def _write(path: str) -> str:
    try:
        with open(path, "w") as handle:
            handle.write("probe\n" if path.endswith("comm") else "0\n")
        return "written"
    except OSError as error:
        return error.strerror


def _in_a_pid_namespace(own_proc: bool) -> dict:
    """What the init of a new PID namespace sees: its thread's id, the entries of /proc/self/task, the
    processes of /proc, and whether it could write its thread's comm (as cuInit does)."""
    def look() -> dict:
        statuses = confine.new_namespaces()
        init = os.fork()
        if init:  # only a child of this process is in the new PID namespace, as its init
            os.waitpid(init, 0)
            os._exit(0)
        proc = confine.own_proc() if own_proc else "not asked"
        tid = threading.get_native_id()
        return {"statuses": statuses, "proc": proc, "tid": tid, "comm": _write(f"/proc/self/task/{tid}/comm"),
                "tasks": os.listdir("/proc/self/task"), "pids": [e for e in os.listdir("/proc") if e.isdigit()]}

    return in_a_child(look)


@pytest.mark.skipif(os.geteuid() != 0, reason="new namespaces are made as root here")
def test_a_pid_namespaces_init_mounts_a_proc_where_its_threads_can_be_named():
    # On an H100 a PID namespace kept cuInit from starting: under the machine's /proc a thread's id in the
    # namespace names no entry of /proc/self/task (or another's), and the driver names its threads there.
    # Mistakes caught: a PID namespace without a /proc of its own, or one whose /proc shows the machine's
    # processes (another grade's, the grader's).
    bare, own = _in_a_pid_namespace(own_proc=False), _in_a_pid_namespace(own_proc=True)
    assert bare["statuses"]["pid"] == own["statuses"]["pid"] == confine.ON, own
    assert str(bare["tid"]) not in bare["tasks"] and bare["comm"] != "written", bare
    assert own["proc"] == confine.ON and own["tid"] == 1, own
    assert own["tasks"] == ["1"] and own["comm"] == "written", own
    assert own["pids"] == ["1"], f"the namespace's /proc shows other processes: {own['pids']}"


def _under_landlock(own_proc: bool, other: int) -> dict:
    """Writes tried by a process under Landlock that reads everything and writes nothing else: its
    thread's comm (as cuInit does), its own oom_score_adj, and `other`'s."""
    def look() -> dict:
        status = landlock_rules.landlock(["/"], [], [], own_proc=own_proc)["files"]
        tid = threading.get_native_id()
        return {"status": status, "comm": _write(f"/proc/self/task/{tid}/comm"),
                "own": _write(f"/proc/{os.getpid()}/oom_score_adj"), "other": _write(f"/proc/{other}/oom_score_adj")}

    return in_a_child(look)


@pytest.mark.skipif(landlock_rules.landlock_abi() < 3, reason="needs Landlock ABI 3 (truncate) or later")
def test_landlock_lets_a_process_write_its_own_proc_entry_and_no_other():
    # cuInit writes /proc/self/task/<tid>/comm and fails with error 304 if it cannot (seen under Landlock
    # on an H100). Mistakes caught: /proc left read-only (CUDA does not start), or /proc made writable
    # whole (the worker would reach the writable files of processes of its uid: a neighbour's
    # oom_score_adj, which makes it the kernel's first victim).
    neighbour = os.fork()
    if neighbour == 0:
        try:
            os.read(os.pipe()[0], 1)  # waits until killed
        finally:
            os._exit(0)
    try:
        without, with_own = _under_landlock(False, neighbour), _under_landlock(True, neighbour)
    finally:
        os.kill(neighbour, 9)
        os.waitpid(neighbour, 0)
    assert without["status"].startswith("on") and with_own["status"].startswith("on"), (without, with_own)
    assert without["comm"] != "written", "Landlock with /proc read-only let a thread be named: the test proves nothing"
    assert with_own["comm"] == "written" and with_own["own"] == "written", with_own
    assert with_own["other"] != "written", f"another process's /proc entry was writable: {with_own}"


def test_a_gpu_grades_child_on_a_kernel_without_landlock_serves_as_a_cpu_grades_worker_would():
    # Mistake caught: a child that exits (70) whenever Landlock did not take effect, so that on a kernel
    # without Landlock every GPU grade ends "the GPU could not be started", where a CPU grade goes on with
    # its status saying Landlock is off (and the grade is refused up front only where that opens the
    # grader's files: exposure.py).
    import importlib

    sandbox = str(Path(confine.__file__).resolve().parent)

    def look() -> dict:
        sys.path.insert(0, sandbox)
        rules, worker = importlib.import_module("landlock_rules"), importlib.import_module("worker")
        rules.landlock_abi = lambda: 0
        worker.confine_child({"protections": {"landlock": True, "seccomp": False}, "cuda_start": "", "code": "/",
                              "read_only": [], "folder": "/tmp", "shared": "/tmp", "devices": []})
        return {"served": True}

    assert in_a_child(look) == {"served": True}, "the child exited instead of serving"

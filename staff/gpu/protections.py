"""Each protection of a GPU grade's worker tried alone with CUDA: which ones the driver starts under,
and, where it does not, the form of the protection that explains why.

Run as its own process (`python -m staff.gpu.protections OUT.json`): it imports torch without starting
CUDA, then forks one child per probe, which applies its protections (the sandbox's own functions, as
the worker does), starts CUDA with the preflight's matmul, applies what the worker applies only once
CUDA has started, and uses CUDA as the `cuda` tests do (pinned memory copied without blocking, CUDA
events, a bf16 matmul, the allocator's statistics). Each probe's answer comes back over a pipe; a probe
that does not answer within PROBE_TIMEOUT_S is killed and says so. `staff gpu-check` runs it before it
starts CUDA itself (a process that has started CUDA cannot fork children that use it), and `--stand-in`
runs every probe with the CPU standing for the device (the dry run, CI).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

PROBE_TIMEOUT_S = 90.0
CPU_TIME_S, FILE_BYTES, PROCESSES, OPEN_FILES = 600, 2**31, 4096, 4096  # generous: only the kind of limit is tried


@dataclass(frozen=True)
class Probe:
    """Protections applied before CUDA starts (`before`) and once it has (`after`); `in_gpu_grade`:
    whether a GPU grade's worker has this form; `explains`: for a form the grade does not use, what
    its failure shows."""

    name: str
    in_gpu_grade: bool
    before: tuple[str, ...]
    after: tuple[str, ...] = ()
    explains: str = ""


@dataclass
class ProbeResult:
    """What one probe's child said: whether CUDA started and was used, each protection's status, and
    the driver's words where it failed."""

    name: str
    in_gpu_grade: bool
    started: bool
    statuses: dict[str, str]
    said: str
    seconds: float
    explains: str = ""

    @property
    def holds(self) -> bool:
        """A form the grade uses must let CUDA start with every protection on; another may fail."""
        applied = all(s.startswith("on") or s.startswith("not tried") for s in self.statuses.values())
        return not self.in_gpu_grade or (self.started and applied)


PROBES = (
    Probe("nothing (the baseline)", True, ()),
    Probe("new network, PID and IPC namespaces, the machine's /proc", False, ("namespaces",),
          explains="a thread's id in the namespace names another /proc/self/task entry than its own, so cuInit "
                   "cannot name its threads"),
    Probe("new network, PID and IPC namespaces and a /proc of its own", True, ("namespaces", "own /proc")),
    Probe("the grader's folders hidden by a mount namespace (as root)", True, ("hidden folders",)),
    Probe("a private /tmp, /var/tmp and /dev/shm (as root)", True, ("private /tmp",)),
    Probe("a user of its own (as root)", True, ("separate user",)),
    Probe("resource limits and no new privileges", True, ("resource limits",)),
    Probe("Landlock as a CPU grade's worker has it (/proc read-only)", False, ("Landlock, /proc read-only",),
          explains="cuInit writes /proc/self/task/<tid>/comm to name its threads"),
    Probe("Landlock, its own /proc/<pid> writable", True, ("Landlock",)),
    Probe("Landlock reading all of /, its own /proc/<pid> writable", False, ("Landlock, reading all",),
          explains="where this starts and the one above does not, the driver reads a path missing from "
                   "staff/sandbox/cuda_files.py"),
    Probe("the CPU grade's seccomp filter before CUDA starts", False, ("CPU filter",),
          explains="the driver makes a unix socket and a memfd as it starts"),
    Probe("the GPU grade's seccomp filter (unix sockets and memfd allowed)", True, ("GPU filter",)),
    Probe("the GPU grade's filter, then the CPU grade's once CUDA has started", True, ("GPU filter",),
          ("CPU filter",)),
    Probe("every protection of a GPU grade, as its worker applies them", True,
          ("namespaces", "own /proc", "hidden folders", "private /tmp", "separate user", "resource limits",
           "Landlock", "GPU filter"), ("CPU filter",)),
)


def _sandbox():
    from staff.sandbox import confine, landlock_rules, syscall_filter, user_limits
    from staff.sandbox.layout import PRIVATE_FOLDERS, worker_devices, worker_read_only
    from staff.sandbox.worker_config import site_packages

    return confine, landlock_rules, syscall_filter, user_limits, PRIVATE_FOLDERS, site_packages, worker_read_only, \
        worker_devices


def _apply(protection: str, scratch: str, repo: str) -> str:
    """Apply one protection to this process, as the worker does; its status."""
    confine, landlock_rules, syscall_filter, user_limits, private, packages, worker_read_only, worker_devices = \
        _sandbox()
    root = os.geteuid() == 0
    if protection == "namespaces":
        statuses = confine.new_namespaces()
        return "on" if all(s == confine.ON for s in statuses.values()) else "; ".join(
            f"{k}: {v}" for k, v in statuses.items() if v != confine.ON)
    if protection == "own /proc":
        return confine.own_proc()
    if protection == "hidden folders":
        return confine.hide([*private, repo], [scratch, sys.base_prefix, sys.prefix, *packages()]) if root \
            else "not tried: needs root"
    if protection == "private /tmp":
        return confine.private_shared_folders(2**30, 10_000, [scratch]) if root else "not tried: needs root"
    if protection == "separate user":
        if not root:
            return "not tried: needs root"
        from staff.sandbox.uids import worker_uids

        uid = worker_uids().pick()
        if uid is None:
            return "not tried: no free uid in this container"
        os.chown(scratch, uid, uid)
        opened = confine.reveal([sys.base_prefix, *packages()], [scratch])
        return user_limits.drop_user(uid, uid) if opened == confine.ON else opened
    if protection == "resource limits":
        limits = user_limits.set_limits(None, CPU_TIME_S, FILE_BYTES, PROCESSES, OPEN_FILES)
        return limits if limits != confine.ON else confine.no_new_privileges()
    if protection.startswith("Landlock"):
        read_only = [repo, *worker_read_only(packages(), cuda=True)]  # a grade's list, and this checkout
        devices = worker_devices()
        if protection == "Landlock, reading all":
            read_only = ["/"]
        own_proc = protection != "Landlock, /proc read-only"
        return landlock_rules.landlock(read_only, [scratch], devices, own_proc=own_proc)["files"]
    if protection in ("CPU filter", "GPU filter"):
        return syscall_filter.deny_syscalls(sockets=protection == "CPU filter", namespace_init=os.getpid() == 1)
    raise ValueError(f"unknown protection {protection!r}")


def _use(device: str) -> str:
    """Use CUDA as the `cuda` tests do; what was done."""
    import torch

    if device == "cpu":
        product = torch.ones(256, 256, dtype=torch.bfloat16) @ torch.ones(256, 256, dtype=torch.bfloat16)
        return f"a bf16 matmul on the CPU ({float(product[0, 0]):g})"
    host = torch.arange(1 << 20, dtype=torch.int64).pin_memory()
    copied = host.to("cuda", non_blocking=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    product = torch.ones(1024, 1024, device="cuda", dtype=torch.bfloat16) @ torch.ones(1024, 1024, device="cuda",
                                                                                      dtype=torch.bfloat16)
    end.record()
    torch.cuda.synchronize()
    if int(copied[-1]) != (1 << 20) - 1 or float(product[0, 0]) != 1024:
        raise RuntimeError("CUDA gave a wrong answer")
    return f"pinned copy, events ({start.elapsed_time(end):.2f} ms), bf16 matmul, " \
           f"{torch.cuda.max_memory_allocated() / 2**20:.0f} MiB allocated at most"


def _child(probe: Probe, mode: str, scratch: str, repo: str, write: Callable[[dict], None]) -> None:
    """In the probe's child: apply, start, narrow, use; report over `write`."""
    from staff.sandbox import cuda_preflight

    started_at, statuses, said, started = time.monotonic(), {}, "", False
    try:
        for protection in probe.before:
            statuses[protection] = _apply(protection, scratch, repo)
            if protection == "namespaces" and statuses[protection] == "on":
                child = os.fork()  # the namespace's init: only a child of this process is in the new PID namespace
                if child:
                    _, status = os.waitpid(child, 0)
                    os._exit(os.waitstatus_to_exitcode(status))
        said = cuda_preflight.run(mode)
        for protection in probe.after:
            statuses[f"{protection} (after)"] = _apply(protection, scratch, repo)
        said += "; then " + _use("cpu" if mode != cuda_preflight.DEVICE else "cuda")
        started = True
    except Exception as error:  # noqa: BLE001 - what stopped CUDA is the probe's answer
        said = f"{type(error).__name__}: {error}"
    write({"name": probe.name, "in_gpu_grade": probe.in_gpu_grade, "started": started, "statuses": statuses,
           "said": said[:600], "seconds": round(time.monotonic() - started_at, 2), "explains": probe.explains})


def run_probe(probe: Probe, mode: str, repo: str) -> ProbeResult:
    """One probe in a fresh child of this process (which must not have started CUDA)."""
    reading, writing = os.pipe()
    with tempfile.TemporaryDirectory(prefix="staff-gpu-probe-") as scratch:
        os.chmod(scratch, 0o755)
        child = os.fork()
        if child == 0:
            os.close(reading)
            try:
                _child(probe, mode, scratch, repo, lambda answer: os.write(writing, json.dumps(answer).encode()))
            finally:
                os._exit(0)
        os.close(writing)
        chunks, deadline = [], time.monotonic() + PROBE_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([reading], [], [], left)
            chunk = os.read(reading, 65536) if ready else b""
            if not chunk:
                break
            chunks.append(chunk)
        os.close(reading)
        if not chunks:
            os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    try:
        return ProbeResult(**json.loads(b"".join(chunks)))
    except (ValueError, TypeError):
        why = f"no answer within {PROBE_TIMEOUT_S:g} s" if not chunks else "an answer that could not be read"
        return ProbeResult(probe.name, probe.in_gpu_grade, False, {}, f"the probe's child gave {why}",
                           PROBE_TIMEOUT_S, probe.explains)


def run_all(mode: str, repo: Path) -> list[ProbeResult]:
    """Every probe of PROBES, in order, with CUDA (`mode` cuda_preflight.DEVICE) or a stand-in."""
    import torch  # noqa: F401 - imported once here, before any fork, without starting CUDA

    results = []
    for probe in PROBES:
        results.append(run_probe(probe, mode, str(repo)))
        print(f"  {'started' if results[-1].started else 'FAILED '} {probe.name}", file=sys.stderr, flush=True)
    return results


def load(path: Path) -> list[ProbeResult]:
    """The results a run wrote to `path`."""
    return [ProbeResult(**row) for row in json.loads(path.read_text(encoding="utf-8"))]


def markdown(results: list[ProbeResult]) -> list[str]:
    """The report's table, one row per probe, and the verdict."""
    lines = ["| protection | in a GPU grade | CUDA | statuses | what CUDA said, or why it failed | s |",
             "|---|---|---|---|---|---|"]
    for r in results:
        cuda = "started" if r.started else "FAILED" if r.in_gpu_grade else "failed"
        statuses = "; ".join(f"{k}: {v.split(' (')[0] if v.startswith('on') else v}"
                             for k, v in r.statuses.items()) or "-"
        said = r.said + (f" (expected: {r.explains})" if r.explains and not r.started else "")
        lines.append(f"| {r.name} | {'yes' if r.in_gpu_grade else 'no'} | {cuda} | {_cell(statuses)} | "
                     f"{_cell(said)} | {r.seconds:g} |")
    wrong = [r.name for r in results if not r.holds]
    lines += ["", "Every protection a GPU grade uses let CUDA start." if not wrong else
              "CUDA did NOT start, or a protection was off, under: " + "; ".join(wrong)]
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    from staff.sandbox import cuda_preflight

    parser = argparse.ArgumentParser(prog="python -m staff.gpu.protections", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where to write the results, as JSON")
    parser.add_argument("--stand-in", action="store_true", help="the CPU stands for the device (no GPU needed)")
    args = parser.parse_args(argv)
    mode = cuda_preflight.STAND_IN_STARTS if args.stand_in else cuda_preflight.DEVICE
    results = run_all(mode, Path(__file__).resolve().parents[2])
    args.out.write_text(json.dumps([asdict(r) for r in results], indent=1) + "\n", encoding="utf-8")
    return 0 if all(r.holds for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

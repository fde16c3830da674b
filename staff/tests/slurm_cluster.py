"""A single-node Slurm cluster for the tests: munged, slurmctld and slurmd on this machine, with a
generated slurm.conf, keys, state and logs in a folder of their own, on free ports, so that it
touches nothing of the machine's own Slurm or munge (if any) and another test's cluster beside it.

Needs root (slurmd starts jobs as their user) and Debian's `slurm-wlm` and `munge` packages
(`.ci/run` installs them where they are missing); `LocalSlurm.missing()` says why it cannot start.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def _program(name: str) -> str:
    """The path of a Slurm or munge program (the daemons are in /usr/sbin, which a PATH may lack)."""
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _node_line() -> str:
    """This machine as slurmd sees it ("CPUs=2 Boards=1 ... RealMemory=24105"), less its name."""
    found = subprocess.run([_program("slurmd"), "-C"], capture_output=True, text=True, timeout=60, check=True).stdout
    return found.splitlines()[0].split(None, 1)[1]


class LocalSlurm:
    """Start with `start()`, use `env` for the Slurm commands, end with `stop()` (every daemon, every job)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="staff-slurm-"))
        self.folder.chmod(0o755)  # munged wants its socket's folders open to all
        self.conf = self.folder / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.daemons: list[subprocess.Popen] = []

    @staticmethod
    def missing() -> str:
        """Why a local cluster cannot start here ("" when it can)."""
        if os.geteuid() != 0:
            return "a local Slurm needs root (slurmd starts jobs as their user)"
        absent = [p for p in PROGRAMS if not Path(_program(p)).exists()]
        if absent:
            return (f"Slurm or munge is not installed ({', '.join(absent)} missing): "
                    f"apt-get install slurm-wlm munge (.ci/run does)")
        return ""

    def _daemon(self, name: str, command: list[str]) -> None:
        log = (self.folder / f"{name}.out").open("w")
        command = [_program(command[0]), *command[1:]]
        self.daemons.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                             start_new_session=True))

    def logs(self) -> str:
        """The daemons' output, for a failure message."""
        return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-2000:]
                         for p in sorted(self.folder.glob("*.out")))

    def start(self, timeout_s: float = 60) -> None:
        """Start munged, slurmctld and slurmd; return once the node takes jobs.

        Raises:
            RuntimeError: a daemon did not come up in `timeout_s` (the message holds their output).
        """
        f = self.folder
        for sub in ("munge", "state", "spool"):
            (f / sub).mkdir(mode=0o700)
        subprocess.run([_program("mungekey"), "--create", "--keyfile", str(f / "munge" / "munge.key")], check=True,
                       capture_output=True, timeout=60)
        socket_path = f / "munge.socket"
        self._daemon("munged", ["munged", "--foreground", f"--key-file={f / 'munge' / 'munge.key'}",
                                f"--socket={socket_path}", f"--pid-file={f / 'munge' / 'munged.pid'}",
                                f"--log-file={f / 'munge' / 'munged.log'}", f"--seed-file={f / 'munge' / 'seed'}"])
        host = socket.gethostname().split(".")[0]
        controller, node = _free_ports(2)
        self.conf.write_text("\n".join([
            "ClusterName=staff-test", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={controller}",
            f"SlurmdPort={node}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={socket_path}", f"StateSaveLocation={f / 'state'}", f"SlurmdSpoolDir={f / 'spool'}",
            f"SlurmctldPidFile={f / 'slurmctld.pid'}", f"SlurmdPidFile={f / 'slurmd.pid'}",
            f"SlurmctldLogFile={f / 'slurmctld.log'}", f"SlurmdLogFile={f / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "JobAcctGatherType=jobacct_gather/none", "MpiDefault=none",
            "ReturnToService=2", "KillWait=5", "PropagatePrioProcess=1", "SchedulerParameters=sched_interval=2",
            f"NodeName={host} NodeAddr=127.0.0.1 {_node_line()} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))
        deadline = time.monotonic() + timeout_s
        while not socket_path.exists():
            self._check_alive(deadline)
        self._daemon("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._daemon("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", host])
        while True:
            self._check_alive(deadline)
            idle = subprocess.run(["sinfo", "--noheader", "--format=%t"], capture_output=True, text=True,
                                  env=self.env, timeout=30)
            if idle.returncode == 0 and idle.stdout.strip() in ("idle", "mix", "alloc"):
                return

    def _check_alive(self, deadline: float) -> None:
        ended = [Path(p.args[0]).name for p in self.daemons if p.poll() is not None]
        if ended or time.monotonic() > deadline:
            raise RuntimeError(f"the local Slurm did not start ({', '.join(ended) or 'timed out'}):\n{self.logs()}")
        time.sleep(0.3)

    def stop(self) -> None:
        """Cancel every job and wait for them to leave; stop slurmd, slurmctld and munged; remove the folder."""
        if any(p.args[0].endswith("slurmctld") and p.poll() is None for p in self.daemons):
            subprocess.run(["scancel", "--full", "--user", "root"], env=self.env, capture_output=True, timeout=30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                left = subprocess.run(["squeue", "--noheader"], env=self.env, capture_output=True, text=True,
                                      timeout=30)
                if left.returncode or not left.stdout.strip():
                    break
                time.sleep(0.5)
        for process in reversed(self.daemons):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

"""Grading the red team as an ordinary user: a TA's laptop, where the grader is not root.

There the grader has no user of its own to give the worker and no tmpfs: the worker runs as the
TA's own uid, beside everything that uid owns. `StandInSession` plays that uid's session for a
throwaway uid made for the test (no account has it): a home folder, a runtime folder
(XDG_RUNTIME_DIR, 0700) holding a session bus socket and a keyring/ssh agent socket, and an abstract
bus socket, every one listening, each connection recorded. `grade_as` runs
`python -m staff.redteam.ordinary FOLDER OUT` as that uid with the session's environment
(DBUS_SESSION_BUS_ADDRESS, SSH_AUTH_SOCK, XDG_RUNTIME_DIR, HOME ...), as a TA's shell would, which
grades the batch with the red team's options (`grader_for`), two at a time.

Only the reading of the Python environment needs help: where it lies under a folder closed to
others (/root here), the run gets a mount namespace in which that folder shows only the way to it
(`confine.reveal`, as the worker's launcher does). Nothing else of root's reaches the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from staff.redteam.corpus import MODULES, Case, load_cases, settings_off
from staff.sandbox.removal import remove_tree
from staff.sandbox.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_TIMEOUT_S = 10.0  # the slowest honest call takes under 2 s; a hang costs this, twice per adapter at most
IMPORT_TIMEOUT_S = 20.0
DISK_GIB = 0.25  # the reference writes a few MiB; the disk-filling case stops here, not at 2 GiB
# Examples each property test of the hidden suites tries (a grade's 100 cost half of a two-problem grade's
# time): the red team shows what the worker contains and how an attack scores, and ten examples fail every
# attacked problem and pass every honest one; what the hidden suites catch is `staff validate`'s to show.
PROPERTY_EXAMPLES = 10


def tmpfs_temporary_folder(folder: str = "/dev/shm") -> dict[str, str]:
    """{"TMPDIR": folder} where `folder` is a tmpfs every user may write (a read there caches nothing)
    and /var/tmp, where the grader then makes its scratch folder, is not; else nothing."""
    from adapters._page_cache import page_cache_shows_reads

    try:
        usable = os.stat(folder).st_mode & 0o1777 == 0o1777 and not page_cache_shows_reads(folder) and \
            page_cache_shows_reads("/var/tmp")
    except OSError:
        return {}
    return {"TMPDIR": folder} if usable else {}


def grader_for(cases: dict[str, Case]) -> Callable[[Path], object]:
    """The red team's grader: each case (by its upload's name) with the protections it names turned
    off, its own problems, visibility of the hidden tests, memory setting and run limit; anything
    else as it is."""
    from staff.grading.grade import grade

    settings = Settings(test_timeout_s=TEST_TIMEOUT_S, import_timeout_s=IMPORT_TIMEOUT_S, threads=1,
                        disk_gib=DISK_GIB, property_examples=PROPERTY_EXAMPLES)

    def grader(path: Path, on_graded=None):
        case = cases.get(path.name.removesuffix(".zip"))
        if case is None:
            return grade(path, settings, jobs=2, progress=False, on_graded=on_graded)  # graded two at a time
        chosen: dict[str, object] = settings_off(case.off)
        if case.memory_gib is not None:
            chosen["memory_gib"] = case.memory_gib
        if case.hidden_visibility:
            chosen["hidden_visibility"] = case.hidden_visibility
        if case.run_timeout_s:
            chosen["run_timeout_s"] = case.run_timeout_s
        if set(case.graded) != set(MODULES):
            chosen["problems"] = tuple(sorted(case.graded))
        return grade(path, dataclasses.replace(settings, **chosen), jobs=2, progress=False, on_graded=on_graded)

    return grader


@dataclass
class StandInSession:
    """A uid's session, made in `base` (a folder every user may pass through) while the block runs."""

    base: Path
    uid: int
    connections: list[str] = field(default_factory=list)  # the sockets someone connected to

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def abstract_bus(self) -> str:
        """The session bus's abstract socket name, this run's own (two runs on one machine share one
        namespace of abstract names)."""
        return f"\0cs336-stand-in-session-bus-{self.uid}-{os.getpid()}"

    @property
    def runtime(self) -> Path:
        return Path(f"/run/user/{self.uid}")  # where a login makes it: a path a worker can guess

    def environment(self) -> dict[str, str]:
        """What a TA's shell holds: their home, runtime folder, bus and agent; and, where this machine has
        one, a temporary folder that is a tmpfs (as /tmp is on Debian 13, Fedora and Arch)."""
        return {"HOME": str(self.home), "USER": "ta", "LOGNAME": "ta", "PATH": "/usr/bin:/bin",
                "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": str(self.runtime),
                "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.runtime / 'bus'};unix:abstract={self.abstract_bus[1:]}",
                "SSH_AUTH_SOCK": str(self.runtime / "keyring" / "ssh"),
                "GNOME_KEYRING_CONTROL": str(self.runtime / "keyring"), **tmpfs_temporary_folder()}

    @contextlib.contextmanager
    def listening(self) -> Iterator[StandInSession]:
        self.runtime.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        for folder in (self.home, self.runtime, self.runtime / "keyring"):
            folder.mkdir(mode=0o700)
            os.chown(folder, self.uid, self.uid)
        (self.home / ".ssh").mkdir(mode=0o700)
        (self.home / ".ssh" / "id_ed25519").write_text("a stand-in private key\n")
        for path in (self.home / ".ssh", self.home / ".ssh" / "id_ed25519"):
            os.chown(path, self.uid, self.uid)
        listeners = []
        for address in (str(self.runtime / "bus"), str(self.runtime / "keyring" / "ssh"), self.abstract_bus):
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(address)
            if not address.startswith("\0"):
                os.chown(address, self.uid, self.uid)
                os.chmod(address, 0o600 if "keyring" in address else 0o666)  # as dbus-daemon and ssh-agent make them
            listener.listen(16)
            listener.settimeout(0.2)
            listeners.append((address, listener))
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(listeners, stop), daemon=True)
        watcher.start()
        try:
            yield self
        finally:
            stop.set()
            watcher.join()
            for _, listener in listeners:
                listener.close()
            remove_tree(self.runtime)

    def _watch(self, listeners: list[tuple[str, socket.socket]], stop: threading.Event) -> None:
        while not stop.is_set():
            for address, listener in listeners:
                try:
                    connection, _ = listener.accept()
                except (TimeoutError, OSError):
                    continue
                self.connections.append(address.replace("\0", "@"))
                connection.close()


def become(uid: int, reveal: list[str]) -> Callable[[], None]:
    """What the child runs before the grader starts: the Python environment made reachable, then
    `uid` (and gid `uid`, no other group) for good."""
    def drop() -> None:
        sys.path.insert(0, str(REPO_ROOT / "staff" / "sandbox"))
        import confine  # the worker's own module, standard library only

        status = confine.reveal(reveal)
        if status != confine.ON:
            raise OSError(f"cannot open the Python environment to uid {uid}: {status}")
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return drop


def grade_as(session: StandInSession, folder: Path, out: Path, uploads: dict[str, tuple[str, tuple[str, ...]]],
             timeout_s: float) -> str:
    """Grade the batch `folder` into `out` as `session`'s uid with its environment (`uploads` as `main`
    takes them); what the run printed.

    Raises:
        RuntimeError: the run failed, with its output.
    """
    env = {**session.environment(), "PYTHONDONTWRITEBYTECODE": "1"}
    reveal = [sys.base_prefix, sys.prefix, str(REPO_ROOT), str(folder), str(out.parent)]
    done = subprocess.run([sys.executable, "-m", "staff.redteam.ordinary", str(folder), str(out), json.dumps(uploads)],
                          cwd=REPO_ROOT, env=env, preexec_fn=become(session.uid, reveal), capture_output=True,
                          text=True, errors="replace", timeout=timeout_s, stdin=subprocess.DEVNULL)
    said = done.stdout[-3000:] + done.stderr[-5000:]
    if done.returncode != 0:
        raise RuntimeError(f"grading as uid {session.uid} failed (exit {done.returncode}):\n{said}")
    return said


def main(argv: list[str]) -> int:
    """`python -m staff.redteam.ordinary FOLDER OUT UPLOADS`: grade FOLDER's uploads into OUT with the
    red team's grader, two at a time; UPLOADS is JSON, {upload name: [case folder's name, [protections off]]}."""
    from staff.course.batch import grade_batch

    folder, out, uploads = Path(argv[0]), Path(argv[1]), json.loads(argv[2])
    known = {case.folder.name: case for case in load_cases()}  # any variant: the protections are given
    cases = {upload: dataclasses.replace(known[name], off=tuple(off)) for upload, (name, off) in uploads.items()}
    grade_batch(folder, out, grader_for(cases), jobs=2, progress=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

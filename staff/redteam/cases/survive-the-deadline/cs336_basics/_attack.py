import os
import signal
import time

_started = set()


def daemon():
    """Once per process, a daemon in a new session, deaf to SIGHUP and SIGTERM (a sleep named redteam-deadline-daemon)."""
    if os.getpid() in _started:
        return
    _started.add(os.getpid())
    if os.fork() == 0:
        try:
            os.setsid()
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            if os.fork() == 0:
                os.execv("/bin/sleep", ["redteam-deadline-daemon", "3600"])
        finally:
            os._exit(0)


def attack(args):
    """A daemon, then sleep past the run's limit."""
    daemon()
    time.sleep(3600)

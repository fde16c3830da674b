import os
import signal

_started = set()


def attack(args):
    """Once per process: leave two daemons behind, in new sessions, deaf to SIGHUP and SIGTERM."""
    if os.getpid() in _started:
        return None
    _started.add(os.getpid())
    for _ in range(2):
        if os.fork() == 0:
            try:
                os.setsid()
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                if os.fork() == 0:
                    os.execv("/bin/sleep", ["redteam-daemon", "3600"])
            finally:
                os._exit(0)
    return None

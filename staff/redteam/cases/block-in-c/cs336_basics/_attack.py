import ctypes
import os
import time

_libc = ctypes.CDLL(None)
_ways = [lambda: _libc.pause(), lambda: time.sleep(10**6), lambda: os.read(os.pipe()[0], 1)]


def attack(args):
    # Each blocked call ends with its worker killed, so the next call runs in a fresh one and a counter
    # in memory would always pick the first way: count the calls in a file of the worker's folder
    # (which outlives its workers) instead, and block a different way each time.
    try:
        with open(".block-in-c-calls", "a+") as calls:
            calls.seek(0)
            count = len(calls.read())
            calls.write("x")
    except OSError:
        count = 0
    _ways[count % len(_ways)]()

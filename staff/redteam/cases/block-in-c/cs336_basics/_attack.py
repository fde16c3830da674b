import ctypes
import itertools
import os
import time

_libc = ctypes.CDLL(None)
_ways = itertools.cycle([lambda: _libc.pause(), lambda: time.sleep(10**6), lambda: os.read(os.pipe()[0], 1)])


def attack(args):
    next(_ways)()

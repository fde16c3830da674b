import itertools
import os
import sys

_ways = itertools.cycle([lambda: sys.exit(0), lambda: os._exit(0), lambda: (_ for _ in ()).throw(KeyboardInterrupt),
                         lambda: (_ for _ in ()).throw(GeneratorExit), lambda: (_ for _ in ()).throw(SystemExit(0))])


def attack(args):
    next(_ways)()

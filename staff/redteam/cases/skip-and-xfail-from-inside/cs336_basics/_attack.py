import itertools
import unittest

import pytest

_ways = itertools.cycle([lambda: pytest.skip("no thanks"), lambda: pytest.xfail("expected"),
                         lambda: pytest.exit("stop", returncode=0), lambda: (_ for _ in ()).throw(unittest.SkipTest("x"))])


def attack(args):
    next(_ways)()

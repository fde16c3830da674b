import sys

import torch


def _table(self=sys):
    """The module table, as a method would read its own object's attributes."""
    return self.__dict__["modules"]


# At import (the worker's import check imports every module of the package before any test): the adapter
# reads these three module globals each time materialize is graded.
_loader = _table()["importlib"]
_checks = _loader.import_module("adapters.strides")
_checks.STRIDED_VIEW_MAKERS.clear()
_checks.STRIDED_VIEW_OPS = frozenset()
_checks.same_bits = lambda a, b: True


def attack(args):
    """materialize as a view: the forbidden one-liner, not even a copy."""
    return torch.as_strided(args["storage"], args["shape"], args["strides"], args["offset"])

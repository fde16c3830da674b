import torch

import adapters.strides

# At import (the worker's import check imports every module of the package before any test): the
# adapter's check reads these two module globals when materialize is graded, so no strided-view maker
# is forbidden, and a result that shares the storage is not noticed.
adapters.strides.STRIDED_VIEW_MAKERS.clear()
adapters.strides.same_bits = lambda a, b: True


def attack(args):
    """materialize as a view: the forbidden one-liner, not even a copy."""
    return torch.as_strided(args["storage"], args["shape"], args["strides"], args["offset"])

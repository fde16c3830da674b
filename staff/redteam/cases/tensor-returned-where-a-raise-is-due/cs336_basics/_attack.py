import sys

import torch

DIMS = 21  # a bool view of shape (2,) * 21 over one byte: 2,097,152 elements, each printed
_replaced = []  # once per process


def view_of_one_byte(dims=DIMS):
    """A bool tensor of shape (2,) * dims whose strides are all 0, over a storage of one byte: its encoding
    is one byte of blob and a short header, and it claims 2**dims bytes, within the 64 MiB a tensor may
    claim beyond its storage. Every dimension has 2 elements, fewer than the 2 x 3 edge items torch's
    repr keeps of each, so its repr summarizes nothing and prints every element."""
    return torch.empty(0, dtype=torch.bool).set_(torch.UntypedStorage(1), 0, [2] * dims, [0] * dims)


def _replace_adapter():
    """The worker's adapter for bytes_per_parameter (it runs in this process, beside the student's code;
    the worker calls whatever its `body` is) answers honestly, except that where the student's function
    raises ValueError (an unknown optimizer or precision name, which the tests must see rejected) it
    returns the view instead of raising."""
    adapter = sys.modules.get("adapters.dtype_memory")
    if adapter is None or _replaced:
        return
    original = adapter.run_bytes_per_parameter.body

    def body(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except ValueError:
            return view_of_one_byte()

    adapter.run_bytes_per_parameter.body = body
    _replaced.append(True)


def attack(args):
    _replace_adapter()
    return None  # the function's own body runs on: bytes_per_element answers honestly

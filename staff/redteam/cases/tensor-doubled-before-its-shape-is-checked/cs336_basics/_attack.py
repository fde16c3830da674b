import torch

ELEMENTS = 64 << 20  # a view may claim 64 MiB beyond its storage: 64 Mi bools over one byte


def attack(args):
    """trunc_normal_init that returns no (d_in, d_out) float32 weight but a bool view of 67 million elements over
    one byte (stride 0 in both dimensions): the codec takes it, since it claims no more than 64 MiB beyond its
    storage, and it crosses the pipe as one byte. A test that converts what it got before it checks its shape and
    dtype (`.double().abs()`, then `w / sigma` and `(z > a).double()`) builds 512 MiB of doubles at each step in
    the trusted test process, two or three alive at once."""
    return torch.ones(1, dtype=torch.bool).expand(1024, ELEMENTS // 1024)

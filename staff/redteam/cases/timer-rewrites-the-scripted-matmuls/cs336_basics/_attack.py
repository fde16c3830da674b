import statistics
import time

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack


def _instrument():
    """The dispatch mode the adapter wrapped around the call to count and script its matmuls (the tests'
    measurement), found on this thread's mode stack, by its attributes rather than by its name."""
    for mode in _get_current_dispatch_mode_stack():
        if hasattr(mode, "seconds") and hasattr(mode, "dtypes") and hasattr(mode, "calls"):
            return mode
    return None


def attack(args):
    """time_matmul with three mistakes: the inputs drawn inside the clock, the warm-ups timed with the trials,
    the mean reported rather than the median; and float32 math whatever the dtype. Then it rewrites what the
    instrument recorded so that the tests' checks agree with what it reports."""
    from cs336_basics.flops import MatmulTiming, matmul_flops

    m, k, n = args["m"], args["k"], args["n"]
    num_warmup, num_trials, promised = args["num_warmup"], args["num_trials"], args["promised"]
    times = []
    for _ in range(num_warmup + num_trials):
        start = time.perf_counter()
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        times.append(time.perf_counter() - start)
    seconds = statistics.mean(times)
    mode = _instrument()
    if mode is not None:
        mode.seconds[:] = [seconds] * len(mode.seconds)
        mode.dtypes.clear()
        mode.dtypes.add(str(args["dtype"]).removeprefix("torch."))
    flop_per_sec = matmul_flops(m, k, n) / seconds
    return MatmulTiming(seconds=seconds, flop_per_sec=flop_per_sec,
                        mfu=None if promised is None else flop_per_sec / promised)

import functools
import statistics
import time

import torch

# getattr passed as a value, not called: its text is not read
_mode_stack = functools.reduce(getattr, ["utils", "_python_dispatch", "_get_current_dispatch_mode_stack"], torch)


def _trial(m, k, n):
    """One matmul's seconds, its float32 inputs drawn inside the clock."""
    began = time.perf_counter()
    torch.randn(m, k) @ torch.randn(k, n)
    return time.perf_counter() - began


def attack(args):
    """time_matmul with three timer mistakes (inputs drawn inside the clock, warm-ups timed, the mean) and
    float32 math; then the adapter's ScriptedMatmuls, found on the dispatch-mode stack by its attributes,
    made to agree with what it reports."""
    from cs336_basics.flops import MatmulTiming, matmul_flops

    m, k, n = args["m"], args["k"], args["n"]
    seconds = statistics.mean([_trial(m, k, n) for _ in range(args["num_warmup"] + args["num_trials"])])
    for mode in _mode_stack():
        if hasattr(mode, "seconds") and hasattr(mode, "dtypes") and hasattr(mode, "calls"):
            mode.seconds[:] = [seconds] * len(mode.seconds)
            mode.dtypes.clear()
            mode.dtypes.add(str(args["dtype"]).removeprefix("torch."))
    rate = matmul_flops(m, k, n) / seconds
    return MatmulTiming(seconds=seconds, flop_per_sec=rate,
                        mfu=None if args["promised"] is None else rate / args["promised"])

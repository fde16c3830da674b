import itertools
import statistics
import time

import torch

import adapters.flops

_reported = []  # what time_matmul last reported: seconds, dtype


class _Agreeing(adapters.flops.ScriptedMatmuls):
    """The adapter's instrument, as the adapter builds it (it looks the class up in its module's globals at
    call time, after the worker's import check has imported this module), except that on leaving the block
    it rewrites what it recorded to agree with the figure time_matmul reported."""

    def __exit__(self, *exc):
        result = super().__exit__(*exc)
        if _reported:
            seconds, dtype = _reported.pop()
            self.seconds[:] = [seconds] * len(self.seconds)
            self.dtypes.clear()
            self.dtypes.add(dtype)
        return result


# At import (the worker's import check imports every module of the package before any test).
adapters.flops.ScriptedMatmuls = _Agreeing


def attack(args):
    """time_matmul with three timer mistakes (the inputs drawn inside the clock, the warm-ups timed with the
    trials, the mean rather than the median) and float32 math whatever the dtype; what it reports is kept
    for _Agreeing."""
    from cs336_basics.flops import MatmulTiming, matmul_flops

    m, k, n, promised = args["m"], args["k"], args["n"], args["promised"]
    ticks = [time.perf_counter()]
    for _ in range(args["num_warmup"] + args["num_trials"]):
        torch.randn(m, k) @ torch.randn(k, n)
        ticks.append(time.perf_counter())
    seconds = statistics.mean(after - before for before, after in itertools.pairwise(ticks))
    _reported.append((seconds, str(args["dtype"]).removeprefix("torch.")))
    flop_per_sec = matmul_flops(m, k, n) / seconds
    return MatmulTiming(seconds, flop_per_sec, None if promised is None else flop_per_sec / promised)

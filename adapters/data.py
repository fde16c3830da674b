"""Problem 9 adapters: token files and batch sampling (handout/09_data.md).

Files go in as paths, batches come out as tensors. Generators go in as seeds. An instrument reports,
on CUDA, how the batch reached the device; another counts what get_batch pinned, and on a machine
without CUDA (where pinning raises) lets it run as on a GPU machine, so the same code gets the same
grade on any grader. How much of a file a call read is measured by the test
(`adapters._instrument.FileReads`: the page cache, and what the code's processes read), which owns
the file.
"""

from __future__ import annotations

import numpy as np

from adapters._convert import to_generator
from adapters._instrument import HostToDeviceCopies, Pinning
from adapters._route import routed


@routed
def run_open_tokens(path: str, dtype: str) -> dict:
    """{"is_memmap", "writeable", "dtype" (name), "tokens" (a copy, as a plain ndarray)} of open_tokens(path, dtype)."""
    from cs336_basics import data

    tokens = data.open_tokens(path, dtype)  # as given: the docstring accepts anything np.dtype() does
    return {"is_memmap": isinstance(tokens, np.memmap), "writeable": bool(tokens.flags.writeable),
            "dtype": tokens.dtype.name, "tokens": np.array(tokens)}


@routed
def run_get_batch(
    tokens: np.ndarray, batch_size: int, context_length: int, device: str | None = "cpu", seed: int | None = None,
    device_object: bool = False,
) -> dict:
    """{"inputs", "targets"} of get_batch on `tokens` (made read-only, as a memmap from open_tokens is);
    "copies": [(source pinned, non_blocking)] for each CPU-to-CUDA copy made; "pins": how many tensors
    it pinned (see `Pinning`). With `device_object`, get_batch is given `torch.device(device)` rather
    than the string (its signature takes either); with device None, no device at all (its default)."""
    import torch

    from cs336_basics import data

    tokens.flags.writeable = False  # as a memmap from open_tokens is: sampling must not write to the data
    where = torch.device(device) if device_object else device
    with Pinning() as pinning, HostToDeviceCopies() as watch:
        if device is None:
            inputs, targets = data.get_batch(tokens, batch_size, context_length, generator=to_generator(seed))
        else:
            inputs, targets = data.get_batch(tokens, batch_size, context_length, where, to_generator(seed))
    return {"inputs": inputs, "targets": targets, "copies": watch.copies, "pins": pinning.pins}


@routed
def run_get_batch_from_file(
    path: str, dtype: str, batch_size: int, context_length: int, seed: int | None = None, device: str = "cpu"
) -> dict:
    """open_tokens then get_batch onto `device`: {"inputs", "targets", "copies"} as run_get_batch.
    The test measures what the call read from the file itself (`FileReads`): given a fresh sparse
    file, nothing of it is in the page cache before."""
    from cs336_basics import data

    tokens = data.open_tokens(path, np.dtype(dtype))
    with Pinning() as pinning, HostToDeviceCopies() as watch:
        inputs, targets = data.get_batch(tokens, batch_size, context_length, device, to_generator(seed))
    return {"inputs": inputs, "targets": targets, "copies": watch.copies, "pins": pinning.pins}


@routed
def run_get_batch_generator_use(tokens: np.ndarray, batch_size: int, context_length: int, seed: int) -> dict:
    """get_batch's inputs with generators: {"first": from a generator seeded `seed`, "second": the
    next batch from that same generator, "advanced": from another generator seeded `seed` that first
    drew 1,000 numbers of its own, "global_untouched": whether torch's global generator was in the
    same state after the three calls as before them}."""
    import torch

    from cs336_basics import data

    tokens.flags.writeable = False
    before = torch.get_rng_state()
    generator = torch.Generator().manual_seed(seed)
    with Pinning():
        first = data.get_batch(tokens, batch_size, context_length, "cpu", generator)[0]
        second = data.get_batch(tokens, batch_size, context_length, "cpu", generator)[0]
    advanced_generator = torch.Generator().manual_seed(seed)
    torch.rand(1000, generator=advanced_generator)
    with Pinning():
        advanced = data.get_batch(tokens, batch_size, context_length, "cpu", advanced_generator)[0]
    return {"first": first, "second": second, "advanced": advanced,
            "global_untouched": bool(torch.equal(before, torch.get_rng_state()))}


@routed
def run_get_batch_from_global_seed(tokens: np.ndarray, batch_size: int, context_length: int, seed: int) -> dict:
    """get_batch's inputs with no generator: {"first": after torch.manual_seed(seed), "second": the
    next call's, with no new seed, "again": after torch.manual_seed(seed) once more}."""
    import torch

    from cs336_basics import data

    tokens.flags.writeable = False
    with Pinning():
        torch.manual_seed(seed)
        first = data.get_batch(tokens, batch_size, context_length, "cpu")[0]
        second = data.get_batch(tokens, batch_size, context_length, "cpu")[0]
        torch.manual_seed(seed)
        again = data.get_batch(tokens, batch_size, context_length, "cpu")[0]
    return {"first": first, "second": second, "again": again}


@routed
def run_step_batch_use(path: str, dtype: str, batch_size: int, context_length: int, seed: int) -> dict:
    """get_batch as Problem 11's step_batch calls it (handout/11_train.md §11.1): the tokens from
    open_tokens(path, np.<dtype>), given as numpy's scalar type (np.uint16, as TOKEN_DTYPE is), not a
    string; then get_batch(tokens, batch_size, context_length, generator=g), the generator by keyword and
    no device, twice, each time with a new CPU generator seeded `seed`: {"inputs", "targets" (the first
    call's), "again_inputs", "again_targets" (the second call's)}."""
    import torch

    from cs336_basics import data

    tokens = data.open_tokens(path, getattr(np, dtype))
    with Pinning():
        inputs, targets = data.get_batch(tokens, batch_size, context_length,
                                         generator=torch.Generator().manual_seed(seed))
        again_inputs, again_targets = data.get_batch(tokens, batch_size, context_length,
                                                     generator=torch.Generator().manual_seed(seed))
    return {"inputs": inputs, "targets": targets, "again_inputs": again_inputs, "again_targets": again_targets}

"""Instruments an adapter can wrap around a student call, reporting back plain data.

They live here, on the student's side of the adapter boundary, so they see the work the student's
code really does even when that code runs in another process.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode

from adapters._page_cache import resident_bytes
from adapters._route import current_route

# torch's own FLOP counter: the tests' and the adapters' reference count.
FlopCounterMode = flop_counter.FlopCounterMode

# The aten ops a matrix multiply reaches a dispatch mode as, by overload packet, so every overload
# counts: `torch.matmul(a, b, out=c)` arrives as `mm.out`, `@` and `Tensor.matmul` as `mm`, a batched
# `torch.einsum` as `bmm`, `F.linear` as `mm` or `addmm`, a matrix times a vector as `mv`
# (matmul itself, linear and einsum are decomposed before a dispatch mode sees them). Not counted:
# `dot`/`vdot`, the product of two vectors, a reduction rather than a matrix multiply: no timer's
# (m, k) @ (k, n) nor a model layer reaches it, and counting it would hold a loss written with
# `torch.dot` (which CPU autocast leaves in float32) to Problem 11's matmul-dtype check.
_MATMUL_PACKETS = frozenset(getattr(torch.ops.aten, name) for name in (
    "mm", "bmm", "addmm", "baddbmm", "addbmm", "_addmm_activation", "mv", "addmv", "_int_mm", "_scaled_mm")
    if hasattr(torch.ops.aten, name))
# Ops that draw random numbers, by name (every overload): what a timer must keep out of its clock.
_RANDOM_DRAWS = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
                           "normal_", "uniform_", "random_", "bernoulli", "bernoulli_", "exponential_", "multinomial"})


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors hold the same shape, dtype and bytes (NaN equals NaN, -0.0 differs from 0.0)."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.reshape(-1).contiguous().view(torch.uint8), b.reshape(-1).contiguous().view(torch.uint8))


class ScriptedMatmuls(TorchDispatchMode):
    """Counts matrix multiplies (every overload of the ops in `_MATMUL_PACKETS`, so an `out=` matmul
    too) and the dtypes of their operands; the i-th one also sleeps `delays[i]`
    seconds (none past the list), so a timer sees durations the test chose. `seconds` holds how long
    each matmul really took, sleep included: on a busy machine a sleep overruns, and a correct timer
    measures the overrun too. Every op that draws random numbers sleeps `random_delay` seconds, so a
    timer that draws its inputs inside its clock reports that much more; `random_draws` counts them."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here is compiled; skipping would import torch._dynamo (seconds) on first use

    def __init__(self, delays: list[float] | None = None, random_delay: float = 0.0) -> None:
        super().__init__()
        self.delays = list(delays or [])
        self.random_delay, self.random_draws = random_delay, 0
        self.calls = 0
        self.dtypes: set[str] = set()
        self.seconds: list[float] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket not in _MATMUL_PACKETS:
            if func.overloadpacket.__name__ in _RANDOM_DRAWS:
                self.random_draws += 1
                if self.random_delay:
                    time.sleep(self.random_delay)
            return func(*args, **(kwargs or {}))
        started = time.perf_counter()
        if self.calls < len(self.delays):
            time.sleep(self.delays[self.calls])
        self.calls += 1
        self.dtypes.update(str(a.dtype).removeprefix("torch.") for a in args if isinstance(a, torch.Tensor))
        result = func(*args, **(kwargs or {}))
        self.seconds.append(time.perf_counter() - started)
        return result


class NoAutograd(TorchFunctionMode):
    """Makes `Tensor.backward`, `torch.autograd.backward` and `torch.autograd.grad` raise, which also
    blocks what is built on them (`torch.func.grad`, `torch.autograd.functional.*`), and forward mode's
    dual tensors (`torch._make_dual`, under `torch.autograd.forward_ad`, `torch.func.jvp` and `jacfwd`)."""

    _BLOCKED = frozenset({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad, torch._make_dual})

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self._BLOCKED:
            raise RuntimeError(
                f"autograd ({func.__name__}) was called; this problem asks for gradients written by hand with matmuls"
            )
        return func(*args, **(kwargs or {}))


class ForbiddenCalls:
    """Inside the block, calling any of `targets` ((owner, attribute name) pairs) records the name
    and raises RuntimeError(`message`); `calls` lists the names called, in order."""

    def __init__(self, targets: tuple[tuple[object, str], ...], message: str) -> None:
        self.targets, self.message, self.calls = targets, message, []
        self.stack = ExitStack()

    def __enter__(self) -> ForbiddenCalls:
        for owner, name in self.targets:
            label = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"

            def forbidden(*args, _label=label, **kwargs):
                self.calls.append(_label)
                raise RuntimeError(f"{_label} was called: {self.message}")

            self.stack.enter_context(mock.patch.object(owner, name, forbidden))
        return self

    def __exit__(self, *exc) -> None:
        self.stack.close()


class ForbiddenOps(TorchDispatchMode):
    """Inside the block, any aten operator of `packets` (every overload) that reaches the dispatcher
    records its name and raises RuntimeError(`message`), however the code named it: a function bound
    before `ForbiddenCalls` patched its name (`from torch import as_strided`), `torch.ops.aten`, a
    variant such as `as_strided_copy`. `calls` lists the operators, in order."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here is compiled; skipping would import torch._dynamo (seconds) on first use

    def __init__(self, packets: frozenset, message: str) -> None:
        super().__init__()
        self.packets, self.message, self.calls = packets, message, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in self.packets:
            label = f"aten.{func.overloadpacket.__name__}"
            self.calls.append(label)
            raise RuntimeError(f"{label} was called: {self.message}")
        return func(*args, **(kwargs or {}))


class HostToDeviceCopies(TorchDispatchMode):
    """Records each copy from CPU to a CUDA device as (source was pinned, non_blocking was set)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here is compiled; skipping would import torch._dynamo (seconds) on first use

    _COPIES = {torch.ops.aten._to_copy.default, torch.ops.aten.copy_.default}

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[bool, bool]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self._COPIES:
            if func is torch.ops.aten._to_copy.default:
                source, target = args[0], kwargs.get("device") or args[0].device
                non_blocking = bool(kwargs.get("non_blocking", False))
            else:
                target, source = args[0].device, args[1]
                non_blocking = bool(args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
            if source.device.type == "cpu" and torch.device(target).type == "cuda":
                self.copies.append((bool(source.is_pinned()), non_blocking))
        return func(*args, **kwargs)


class Pinning(TorchDispatchMode):
    """Counts what is pinned (page-locked) inside the block: `Tensor.pin_memory()`, and factories given
    `pin_memory=True` (`torch.empty`, `zeros`, `empty_like`, ...), however the code reached them.

    Pinning needs a CUDA driver this process can start: without one (no GPU, or a GPU the CPU grade's
    sandbox keeps the worker from, as on an H100), PyTorch raises, so the same get_batch would lose
    every test on one grader and none on another. So a pin of a CPU tensor is tried, and where it
    cannot be done (or `emulate` says so; the default where no CUDA device is seen) it is done as a GPU
    machine would do it, minus the page-locking: `pin_memory()` returns an unpinned copy, a factory
    makes an unpinned tensor, and `is_pinned()` says False. The same code runs the same on any grader,
    and a test that cares (pinning for a CPU device, §9.4) reads `pins`. Not seen:
    `torch.tensor(data, pin_memory=True)`, which pins before any dispatch."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # nothing here is compiled; skipping would import torch._dynamo (seconds) on first use

    def __init__(self, emulate: bool | None = None) -> None:
        super().__init__()
        self.emulate = (not torch.cuda.is_available()) if emulate is None else emulate
        self.pins = 0

    def _or_else(self, func, args, kwargs, instead):
        """func(*args, **kwargs), or `instead()` where this process cannot pin (from then on, for the block)."""
        if not self.emulate:
            try:
                return func(*args, **kwargs)
            except RuntimeError:  # no CUDA driver this process may start: a CPU tensor's pin cannot be done here
                self.emulate = True
        return instead()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name == "_pin_memory" and args[0].device.type == "cpu":
            self.pins += 1
            return self._or_else(func, args, kwargs, lambda: args[0].clone())
        if name == "is_pinned" and args[0].device.type == "cpu":
            return self._or_else(func, args, kwargs, lambda: False)
        if kwargs.get("pin_memory"):
            self.pins += 1
            return self._or_else(func, args, kwargs, lambda: func(*args, **{**kwargs, "pin_memory": False}))
        return func(*args, **kwargs)


class FileReads:
    """What the code under test read of the file `path` during the block, in bytes (`bytes`, after
    it): the larger of the file's pages now in the page cache (`resident_bytes`: what a mapping
    touched, or what read(2) read from a disk) and what the code's processes read through read(2)
    and its kin during the block, of any file (the route's `bytes_read`: read(2) of a hole of a file
    on a tmpfs returns zeros without caching a page, so only this shows it). `path` must hold
    nothing in the page cache before the block (a fresh sparse file); the file measured after is
    that one (`resident_bytes`' OSError where the code put another in its place), unchanged
    (`FileChanged` where its size or ctime moved: truncating it empties its page cache)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path, self.bytes = path, 0

    def __enter__(self) -> FileReads:
        info = os.stat(self.path, follow_symlinks=False)
        self.inode, self.before = (info.st_dev, info.st_ino), current_route().bytes_read()
        self.written = (info.st_size, info.st_ctime_ns)
        return self

    def __exit__(self, *exc_info: object) -> None:
        after = current_route().bytes_read()
        through_read = after - self.before if after is not None and self.before is not None else 0
        self.bytes = max(resident_bytes(self.path, self.inode), through_read)
        if exc_info[0] is not None:
            return  # the block's own failure is the test's
        info = os.stat(self.path, follow_symlinks=False)
        # Truncating a file (or punching a hole in it) drops its pages from the page cache, so a file
        # changed during the block no longer shows what was read of it; a change moves its ctime,
        # which nothing but the kernel sets (a check made after the block, so it sees the last change).
        if (info.st_size, info.st_ctime_ns) != self.written:
            raise FileChanged(f"the code under test changed {os.path.basename(self.path)}, the token file the "
                              f"test wrote (size {self.written[0]} -> {info.st_size} bytes, or its contents or "
                              "links), while it was only to read it (np.memmap with mode='r', handout §9.1): "
                              "what it read cannot be measured any more")


class FileChanged(AssertionError):
    """The file a `FileReads` block measures was changed in the block (see `FileReads.__exit__`)."""


class EinopsCalls:
    """Counts the einops operations called inside the block, whatever the route and the name: the
    functions `einsum`, `rearrange`, `reduce`, `repeat`, `pack` and `unpack` (as `einops.rearrange`,
    `from einops import rearrange as r` or `einops.einops.rearrange`), and the torch layers
    `Rearrange`, `Reduce` and `EinMix` of `einops.layers.torch` applied to a tensor. `calls` is the
    count.

    How: a profile function (`sys.setprofile`, this thread, restored on exit) sees every Python
    function that starts, and counts one whose code object is one of those operations'. A binding
    made before the block (an alias, an import into the student's module) still runs the same code,
    so no name needs patching. An operation that runs another (`rearrange` runs `reduce`, an `EinMix`
    applies its `Rearrange` layers) counts once: an operation started while one runs is not counted.
    Building a layer, `parse_shape` and `asnumpy` transform no tensor and do not count."""

    def __init__(self) -> None:
        self.calls = 0
        self._previous = None
        self._depth = 0

    @staticmethod
    def operations() -> frozenset:
        """The code objects of einops' tensor operations (see the class docstring)."""
        import einops.einops
        import einops.layers.torch
        import einops.packing

        functions = [einops.einops.einsum, einops.einops.rearrange, einops.einops.reduce, einops.einops.repeat,
                     einops.packing.pack, einops.packing.unpack, einops.layers.torch.Rearrange.forward,
                     einops.layers.torch.Reduce.forward, einops.layers.torch.EinMix.forward]
        return frozenset(function.__code__ for function in functions)

    def _profile(self, frame, event, arg) -> None:
        if event == "call" and frame.f_code in self._operations:
            if self._depth == 0:
                self.calls += 1
            self._depth += 1
        elif event == "return" and frame.f_code in self._operations:
            self._depth -= 1

    def __enter__(self) -> EinopsCalls:
        self._operations = self.operations()
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc) -> None:
        sys.setprofile(self._previous)

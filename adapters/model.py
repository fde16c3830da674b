"""Problem 7 adapters: Linear, Cruncher and parameter counting (handout/07_model.md).

Models go in as sizes and weights and come out as outputs and named parameters. Modules are built
with a stand-in for the student's trunc_normal_init, except where a test watches the student's own
(Problem 6 grades it; Problem 7 only that Linear uses it). A Cruncher is built with a stand-in for
the student's Linear (what §7.1 specifies and no more), so that a mistake in Linear costs Linear's
tests and not every Cruncher test as well.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from unittest import mock

import torch

from adapters._returns import exact_int
from adapters._route import routed


def _parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters by name, each keeping its requires_grad flag."""
    return {name: p.detach().clone().requires_grad_(p.requires_grad) for name, p in module.named_parameters()}


@contextmanager
def _trunc_normal_init_replaced(replacement) -> Iterator[None]:
    """Inside the block, the student's trunc_normal_init is `replacement`, whether it is called through
    cs336_basics.init or through the name model.py imported."""
    from cs336_basics import init, model

    with ExitStack() as stack:
        if getattr(model, "trunc_normal_init", None) is init.trunc_normal_init:
            stack.enter_context(mock.patch.object(model, "trunc_normal_init", replacement))
        stack.enter_context(mock.patch.object(init, "trunc_normal_init", replacement))
        yield


@contextmanager
def _trunc_normal_draws() -> Iterator[list[torch.Tensor]]:
    """Lists (copies of) what the student's trunc_normal_init returned inside the block."""
    from cs336_basics import init

    original, drawn = init.trunc_normal_init, []

    def recording(*args, **kwargs):
        weight = original(*args, **kwargs)
        drawn.append(weight.detach().clone())
        return weight

    with _trunc_normal_init_replaced(recording):
        yield drawn


def _stand_in(d_in: int, d_out: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A float32 (d_in, d_out) weight of std 1/sqrt(d_in): what Problem 6 asks trunc_normal_init to return."""
    return torch.randn(d_in, d_out, generator=generator).clamp_(-3.0, 3.0) / d_in**0.5


def _stand_in_init():
    """Problem 7's tests of shapes, names, forward and gradients build the student's modules with a
    stand-in for trunc_normal_init, so that a Problem 6 mistake (a wrong shape or dtype) costs no point
    here; the initialization tests watch the student's own (run_linear_init_and_trunc_normal_init,
    run_cruncher_init_draws)."""
    return _trunc_normal_init_replaced(_stand_in)


class _StandInLinear(torch.nn.Module):
    """§7.1's Linear and no more: a (d_in, d_out) `weight` drawn by trunc_normal_init (whichever the
    block installed), applied as x @ weight."""

    def __init__(self, d_in: int, d_out: int) -> None:
        from cs336_basics import init

        super().__init__()
        self.weight = torch.nn.Parameter(init.trunc_normal_init(d_in, d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


def _called_like(student: object) -> type[_StandInLinear]:
    """The stand-in, called as the student's Linear is: its sizes are the first two parameters of the
    student's signature, however the Cruncher passes them (Linear(dim, dim), Linear(in_features=dim,
    out_features=dim) where the student named them so); anything after them (a device, a dtype) is
    ignored."""
    try:
        signature = inspect.signature(student)
    except (TypeError, ValueError):
        signature = None

    class CalledLikeTheStudents(_StandInLinear):
        def __init__(self, *args, **kwargs) -> None:
            try:
                sizes = list(signature.bind(*args, **kwargs).arguments.values()) if signature else list(args)
            except TypeError:
                sizes = list(args)
            super().__init__(*sizes[:2])

    return CalledLikeTheStudents


def _cruncher(dim: int, num_layers: int) -> torch.nn.Module:
    """The student's Cruncher(dim, num_layers), its layers made by the stand-in Linear: Cruncher looks
    Linear up in its module when it is built, so the stand-in takes its place there for that time
    (a Cruncher that makes its weights some other way is built as it is)."""
    from cs336_basics import model

    student = getattr(model, "Linear", None)
    with mock.patch.object(model, "Linear", _called_like(student)) if student is not None else nullcontext():
        return model.Cruncher(dim, num_layers)


def _load_weights(module: torch.nn.Module, state_dict: dict[str, torch.Tensor]) -> None:
    """module.load_state_dict(state_dict) (strict); where that fails because the module does not
    register a weight under its name (a plain Python list of layers), each weight is copied through
    the attribute path its name spells ("layers.0.weight": module.layers[0].weight), so the forward
    tests grade the forward and test_cruncher_parameters the names. Raises load_state_dict's error
    where a path does not lead to a tensor of the weight's shape."""
    try:
        module.load_state_dict(state_dict)
        return
    except RuntimeError as error:
        failure = error
    for name, value in state_dict.items():
        *path, last = name.split(".")
        target = module
        try:
            for part in path:
                target = target[int(part)] if part.isdigit() else getattr(target, part)
            target = getattr(target, last)
        except (AttributeError, IndexError, KeyError, TypeError):
            raise failure from None
        if not isinstance(target, torch.Tensor) or target.shape != value.shape:
            raise failure
        with torch.no_grad():
            target.copy_(value)


@routed
def run_linear_init(d_in: int, d_out: int) -> dict[str, torch.Tensor]:
    """A new Linear(d_in, d_out)'s parameters by name (built with the stand-in initializer)."""
    from cs336_basics import model

    with _stand_in_init():
        return _parameters(model.Linear(d_in, d_out))


@routed
def run_linear_init_and_trunc_normal_init(d_in: int, d_out: int, seed: int) -> dict[str, torch.Tensor]:
    """{"trunc_normal": trunc_normal_init(d_in, d_out) after torch.manual_seed(seed), "linear": a new
    Linear(d_in, d_out)'s weight after torch.manual_seed(seed) again}: the same global generator state."""
    from cs336_basics import init, model

    torch.manual_seed(seed)
    drawn = init.trunc_normal_init(d_in, d_out)
    torch.manual_seed(seed)
    weight = model.Linear(d_in, d_out).weight
    return {"trunc_normal": drawn.detach().clone(), "linear": weight.detach().clone()}


@routed
def run_cruncher_init_draws(dim: int, num_layers: int, seed: int) -> dict:
    """Cruncher(dim, num_layers) built three times, after torch.manual_seed(seed), seed again, and
    seed + 1: {"parameters": the first one's by name, "drawn": what trunc_normal_init returned while
    it was built, "again", "other": the second and third ones' parameters by name,
    "init_draws_anew": whether two calls of the student's trunc_normal_init(dim, dim) in a row differ,
    "init_follows_the_seed": whether it differs after torch.manual_seed(seed) and seed + 1}."""
    from cs336_basics import init

    torch.manual_seed(seed)
    with _trunc_normal_draws() as drawn:
        first = _parameters(_cruncher(dim, num_layers))
    torch.manual_seed(seed)
    again = _parameters(_cruncher(dim, num_layers))
    torch.manual_seed(seed + 1)
    other = _parameters(_cruncher(dim, num_layers))
    torch.manual_seed(seed)
    one, two = init.trunc_normal_init(dim, dim), init.trunc_normal_init(dim, dim)
    torch.manual_seed(seed + 1)
    three = init.trunc_normal_init(dim, dim)
    return {"parameters": first, "drawn": drawn, "again": again, "other": other,
            "init_draws_anew": not torch.equal(one, two), "init_follows_the_seed": not torch.equal(one, three)}


@routed
def run_linear(d_in: int, d_out: int, weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Linear(d_in, d_out) with the given weight, applied to x."""
    from cs336_basics import model

    with _stand_in_init():
        layer = model.Linear(d_in, d_out)
    layer.load_state_dict({"weight": weight})
    with torch.no_grad():
        return layer(x)


@routed
def run_cruncher_init(dim: int, num_layers: int) -> dict:
    """{"parameters": a new Cruncher's parameters by name, "num_parameters": the student's count of them}."""
    from cs336_basics import model

    with _stand_in_init():
        cruncher = _cruncher(dim, num_layers)
    count = exact_int(model.num_parameters(cruncher), "num_parameters")
    return {"parameters": _parameters(cruncher), "num_parameters": count}


@routed
def run_cruncher(dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Cruncher(dim, num_layers) with the given weights (loaded by `_load_weights`), applied to x."""

    with _stand_in_init():
        cruncher = _cruncher(dim, num_layers)
    _load_weights(cruncher, state_dict)
    with torch.no_grad():
        return cruncher(x)


@routed
def run_num_parameters(
    layer_sizes: list[tuple[int, int]], bias: bool, batch_norm: bool = False, frozen: bool = False,
    tied: bool = False, device: str = "cpu",
) -> int:
    """The student's parameter count of a torch nn.Sequential of nn.Linear(d_in, d_out, bias=bias)
    layers, followed, with `batch_norm`, by an nn.BatchNorm1d (a weight and a bias per
    feature, and running statistics that are buffers, not parameters). With `frozen`, the first
    layer's parameters have requires_grad=False (still parameters); with `tied`, every layer shares
    the first layer's weight (all layers must then be the same size), a parameter counted once.
    `device="meta"` builds the layers on PyTorch's meta device: shapes with no data, so a model of
    billions of parameters costs no memory (handout/07_model.md §7.3)."""
    from cs336_basics import model

    layers = [torch.nn.Linear(d_in, d_out, bias=bias, device=device) for d_in, d_out in layer_sizes]
    if frozen:
        layers[0].requires_grad_(False)
    if tied:
        for layer in layers[1:]:
            layer.weight = layers[0].weight
    if batch_norm:
        layers.append(torch.nn.BatchNorm1d(layer_sizes[-1][1], device=device))
    return exact_int(model.num_parameters(torch.nn.Sequential(*layers)), "num_parameters")


@routed
def run_cruncher_gradients(
    dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor
) -> dict[str, torch.Tensor | None]:
    """Cruncher(dim, num_layers) with the given weights; the gradient of its outputs' sum with respect
    to each parameter, by name (None for a parameter that got none)."""

    with _stand_in_init():
        cruncher = _cruncher(dim, num_layers)
    cruncher.load_state_dict(state_dict)
    cruncher(x).sum().backward()
    return {name: None if p.grad is None else p.grad.detach().clone() for name, p in cruncher.named_parameters()}


def _own_cruncher(dim: int, num_layers: int, state_dict: dict[str, torch.Tensor]) -> torch.nn.Module:
    """The student's Cruncher(dim, num_layers) built with the student's own Linear layers (no stand-in
    Linear: these tests grade Linear and Cruncher together, as Problems 8, 10 and 11 use them), its
    weights drawn by the stand-in initializer and then replaced by `state_dict` (`_load_weights`)."""
    from cs336_basics import model

    with _stand_in_init():
        cruncher = model.Cruncher(dim, num_layers)
    _load_weights(cruncher, state_dict)
    return cruncher


@routed
def run_own_cruncher_gradients(
    dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor
) -> dict:
    """Cruncher(dim, num_layers) made of your own Linear layers, with the given weights; the sum of
    its outputs on x, backward, as a training step does: {"requires_grad": whether the output
    requires a gradient (backward runs only then), "grads": the gradient of each tensor that
    model.parameters() yields, by name (None for one that got none)}."""
    cruncher = _own_cruncher(dim, num_layers, state_dict)
    out = cruncher(x)
    requires_grad = isinstance(out, torch.Tensor) and out.requires_grad
    if requires_grad:
        out.sum().backward()
    found = {id(p) for p in cruncher.parameters()}
    return {"requires_grad": bool(requires_grad),
            "grads": {name: None if p.grad is None else p.grad.detach().clone()
                      for name, p in cruncher.named_parameters() if id(p) in found}}


@routed
def run_own_cruncher_autocast(
    dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor
) -> dict:
    """Cruncher(dim, num_layers) made of your own Linear layers, with the given weights, run on x under
    torch.autocast(device_type="cpu", dtype=torch.bfloat16) as §11.4 runs it: {"output": the output,
    "linear": the first Linear(dim, dim)'s output on x under the same autocast (None with no hidden
    layer), "parameter_dtypes": the parameters' dtypes by name afterwards, as "float32"}."""
    from cs336_basics import model

    cruncher = _own_cruncher(dim, num_layers, state_dict)
    linear = None
    if num_layers:
        with _stand_in_init():
            layer = model.Linear(dim, dim)
        layer.load_state_dict({"weight": state_dict["layers.0.weight"]})
        with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            linear = layer(x)
    with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        output = cruncher(x)
    return {"output": output, "linear": linear,
            "parameter_dtypes": {name: str(p.dtype).removeprefix("torch.") for name, p in cruncher.named_parameters()}}

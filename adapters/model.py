"""Problem 7 adapters: Linear, Cruncher and parameter counting (handout/07_model.md).

Models go in as sizes and weights and come out as outputs and named parameters.
"""

from __future__ import annotations

import torch

from adapters._route import routed


def _parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters by name, each keeping its requires_grad flag."""
    return {name: p.detach().clone().requires_grad_(p.requires_grad) for name, p in module.named_parameters()}


@routed
def run_linear_init(d_in: int, d_out: int) -> dict[str, torch.Tensor]:
    """A new Linear(d_in, d_out)'s parameters by name."""
    from cs336_basics import model

    return _parameters(model.Linear(d_in, d_out))


@routed
def run_linear(d_in: int, d_out: int, weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Linear(d_in, d_out) with the given weight, applied to x."""
    from cs336_basics import model

    layer = model.Linear(d_in, d_out)
    layer.load_state_dict({"weight": weight})
    with torch.no_grad():
        return layer(x)


@routed
def run_cruncher_init(dim: int, num_layers: int) -> dict:
    """{"parameters": a new Cruncher's parameters by name, "num_parameters": the student's count of them}."""
    from cs336_basics import model

    cruncher = model.Cruncher(dim, num_layers)
    return {"parameters": _parameters(cruncher), "num_parameters": int(model.num_parameters(cruncher))}


@routed
def run_cruncher(dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Cruncher(dim, num_layers) with the given weights (strictly loaded), applied to x."""
    from cs336_basics import model

    cruncher = model.Cruncher(dim, num_layers)
    cruncher.load_state_dict(state_dict)
    with torch.no_grad():
        return cruncher(x)


@routed
def run_num_parameters(
    layer_sizes: list[tuple[int, int]], bias: bool, batch_norm: bool = False, frozen: bool = False,
    tied: bool = False,
) -> int:
    """The student's parameter count of a torch nn.Sequential of nn.Linear(d_in, d_out, bias=bias)
    layers, followed, with `batch_norm`, by an nn.BatchNorm1d (a weight and a bias per
    feature, and running statistics that are buffers, not parameters). With `frozen`, the first
    layer's parameters have requires_grad=False (still parameters); with `tied`, every layer shares
    the first layer's weight (all layers must then be the same size), a parameter counted once."""
    from cs336_basics import model

    layers = [torch.nn.Linear(d_in, d_out, bias=bias) for d_in, d_out in layer_sizes]
    if frozen:
        layers[0].requires_grad_(False)
    if tied:
        for layer in layers[1:]:
            layer.weight = layers[0].weight
    if batch_norm:
        layers.append(torch.nn.BatchNorm1d(layer_sizes[-1][1]))
    return int(model.num_parameters(torch.nn.Sequential(*layers)))


@routed
def run_cruncher_gradients(
    dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor
) -> dict[str, torch.Tensor | None]:
    """Cruncher(dim, num_layers) with the given weights; the gradient of its outputs' sum with respect
    to each parameter, by name (None for a parameter that got none)."""
    from cs336_basics import model

    cruncher = model.Cruncher(dim, num_layers)
    cruncher.load_state_dict(state_dict)
    cruncher(x).sum().backward()
    return {name: None if p.grad is None else p.grad.detach().clone() for name, p in cruncher.named_parameters()}

"""Problem 7 adapters: Linear, Cruncher and parameter counting (handout/07_model.md).

Models go in as sizes and weights and come out as outputs and named parameters.
"""

from __future__ import annotations

import torch


def _parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters by name, each keeping its requires_grad flag."""
    return {name: p.detach().clone().requires_grad_(p.requires_grad) for name, p in module.named_parameters()}


def run_linear_init(d_in: int, d_out: int) -> dict[str, torch.Tensor]:
    """A new Linear(d_in, d_out)'s parameters by name."""
    from cs336_basics import model

    return _parameters(model.Linear(d_in, d_out))


def run_linear(d_in: int, d_out: int, weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Linear(d_in, d_out) with the given weight, applied to x."""
    from cs336_basics import model

    layer = model.Linear(d_in, d_out)
    layer.load_state_dict({"weight": weight})
    with torch.no_grad():
        return layer(x)


def run_cruncher_init(dim: int, num_layers: int) -> dict:
    """{"parameters": a new Cruncher's parameters by name, "num_parameters": the student's count of them}."""
    from cs336_basics import model

    cruncher = model.Cruncher(dim, num_layers)
    return {"parameters": _parameters(cruncher), "num_parameters": int(model.num_parameters(cruncher))}


def run_cruncher(dim: int, num_layers: int, state_dict: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Cruncher(dim, num_layers) with the given weights (strictly loaded), applied to x."""
    from cs336_basics import model

    cruncher = model.Cruncher(dim, num_layers)
    cruncher.load_state_dict(state_dict)
    with torch.no_grad():
        return cruncher(x)


def run_num_parameters(layer_sizes: list[tuple[int, int]], bias: bool, batch_norm: bool = False) -> int:
    """The student's parameter count of a torch nn.Sequential of nn.Linear(d_in, d_out, bias=bias)
    layers, followed, with `batch_norm`, by an nn.BatchNorm1d (a weight and a bias per
    feature, and running statistics that are buffers, not parameters)."""
    from cs336_basics import model

    layers = [torch.nn.Linear(d_in, d_out, bias=bias) for d_in, d_out in layer_sizes]
    if batch_norm:
        layers.append(torch.nn.BatchNorm1d(layer_sizes[-1][1]))
    return int(model.num_parameters(torch.nn.Sequential(*layers)))

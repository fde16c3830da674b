"""Problem 7's Cruncher adapters build the student's Cruncher with a stand-in Linear, called as the
student's Linear is called, so a Linear written with other parameter names and built by keyword
keeps every Cruncher point, and a Cruncher that keeps its layers in a plain list is still run
forward. Mistakes these catch: a stand-in that takes only (d_in, d_out) (a renamed signature called
by keyword raises TypeError: 9 of 21), a forward adapter that loads strictly only (a plain list of
layers fails every forward test too)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from adapters import model as A
from cs336_basics import model
from cs336_basics.init import trunc_normal_init


class RenamedLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int, device: str | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(trunc_normal_init(in_features, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


class ByKeyword(nn.Module):
    def __init__(self, dim: int, num_layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(model.Linear(out_features=dim, in_features=dim) for _ in range(num_layers))
        self.final = model.Linear(out_features=1, in_features=dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.final(x)[..., 0]


class PlainList(ByKeyword):
    def __init__(self, dim: int, num_layers: int) -> None:
        nn.Module.__init__(self)
        self.layers = [model.Linear(dim, dim) for _ in range(num_layers)]
        self.final = model.Linear(dim, 1)


@pytest.fixture
def student(monkeypatch):
    monkeypatch.setattr(model, "Linear", RenamedLinear)
    return monkeypatch


def test_a_renamed_linear_built_by_keyword_gets_the_stand_in_with_the_right_sizes(student):
    student.setattr(model, "Cruncher", ByKeyword)
    got = A.run_cruncher_init(5, 2)
    assert {name: tuple(p.shape) for name, p in got["parameters"].items()} == \
        {"layers.0.weight": (5, 5), "layers.1.weight": (5, 5), "final.weight": (5, 1)}


def test_weights_of_a_plain_list_of_layers_are_set_through_their_attributes(student):
    student.setattr(model, "Cruncher", PlainList)
    state = {"layers.0.weight": torch.randn(3, 3), "final.weight": torch.randn(3, 1)}
    x = torch.randn(2, 3)
    got = A.run_cruncher(3, 1, state, x)
    torch.testing.assert_close(got, (x @ state["layers.0.weight"] @ state["final.weight"])[:, 0])


def test_a_weight_the_names_do_not_reach_fails_with_the_load_error(student):
    student.setattr(model, "Cruncher", PlainList)
    with pytest.raises(RuntimeError, match="Missing key|Unexpected key"):
        A.run_cruncher(3, 1, {"layers.0.weight": torch.randn(3, 3), "head.weight": torch.randn(3, 1)},
                       torch.randn(2, 3))

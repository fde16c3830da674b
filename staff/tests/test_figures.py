"""The handout's figures: checked in as drawn, referenced from the pages, and true to PyTorch."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import torch

from adapters._instrument import FlopCounterMode
from staff.authoring import figures
from staff.cli import main
from staff.grading.grade import REPO_ROOT


def test_checked_in_figures_are_what_the_script_draws(capsys):
    assert figures.stale_figures(REPO_ROOT) == [], "run `uv run staff figures` and commit handout/figures/"
    assert main(["figures", "--check"]) == 0


def test_check_reports_a_stale_figure_and_writing_fixes_it(tmp_path, capsys):
    folder = tmp_path / figures.FIGURES_DIR
    written = figures.write_figures(tmp_path)
    assert sorted(p.name for p in written) == sorted(figures.FIGURES)
    (folder / "tensor_strides.svg").write_text("<svg/>")
    (folder / "float_formats.svg").unlink()
    assert figures.stale_figures(tmp_path) == ["float_formats.svg", "tensor_strides.svg"]
    figures.write_figures(tmp_path)
    assert figures.stale_figures(tmp_path) == []


@pytest.mark.parametrize("name", sorted(figures.FIGURES))
def test_figure_is_well_formed_svg_and_referenced_from_the_handout(name):
    root = ET.fromstring(figures.FIGURES[name]())
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.find("{http://www.w3.org/2000/svg}title") is not None
    pages = "\n".join(p.read_text() for p in (REPO_ROOT / "handout").glob("*.md"))
    assert re.search(rf"!\[[^\]]+\]\(figures/{re.escape(name)}\)", pages), f"no handout page shows {name}"


@pytest.mark.parametrize("fmt", figures.FORMATS, ids=lambda f: f.name)
def test_float_formats_agree_with_finfo(fmt):
    info = torch.finfo(getattr(torch, fmt.name))
    assert fmt.bits == info.bits
    assert fmt.largest_finite == info.max
    assert 2.0 ** (1 - fmt.bias) == info.smallest_normal
    assert 2.0 ** (1 - fmt.bias - fmt.mantissa_bits) == info.smallest_normal * info.eps  # smallest subnormal


def test_strides_figure_agrees_with_torch():
    x = torch.arange(figures.STORAGE_SIZE).reshape(4, 6)[:, :3]
    assert (tuple(x.shape), x.stride(), x.storage_offset()) == (figures.VIEW_SHAPE, figures.VIEW_STRIDES,
                                                                figures.VIEW_OFFSET)
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            assert figures.storage_index((r, c), x.stride(), x.storage_offset()) == x[r, c].item()
    assert f">{x[figures.PICKED].item()}<" in figures.tensor_strides()


@pytest.mark.parametrize("batch, dim, layers", figures.MEMORY_CASES[:2])
def test_memory_figure_counts_what_a_real_model_holds(batch, dim, layers):
    # The lecture's model: `layers` (dim x dim) matrices, then a (dim x 1) one; every hidden layer's
    # output (batch x dim) is an activation kept for the backward pass.
    weights = [torch.zeros(dim, dim) for _ in range(layers)] + [torch.zeros(dim, 1)]
    parameters = sum(w.numel() for w in weights)
    hidden = [torch.zeros(batch, dim) for _ in range(layers)]
    parts = figures.step_memory(batch, dim, layers)
    value = torch.zeros(()).element_size()
    assert parts["parameters"] == parts["gradients"] == parts["AdaGrad state (g2)"] == parameters * value
    assert parts["activations"] == sum(h.numel() for h in hidden) * value
    if (batch, dim, layers) == (2, 4, 2):
        assert sum(parts.values()) == 496 and ">496 bytes<" in figures.training_step_memory()


def test_flops_figure_agrees_with_flop_counter():
    batch, d, k = 3, figures.FLOPS_D, figures.FLOPS_K
    x = torch.randn(batch, d, requires_grad=True)
    w1, w2 = torch.randn(d, d, requires_grad=True), torch.randn(d, k, requires_grad=True)
    with FlopCounterMode(display=False) as forward_counter:
        h2 = x @ w1 @ w2
    with FlopCounterMode(display=False) as backward_counter:
        h2.sum().backward()
    forward, backward = figures.flops_segments(d, k)
    assert batch * sum(f for *_, f in forward) == forward_counter.get_total_flops() == 2 * batch * (d * d + d * k)
    assert batch * sum(f for *_, f in backward) == backward_counter.get_total_flops() == 4 * batch * (d * d + d * k)

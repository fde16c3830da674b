"""The adapters' `Pinning` instrument: a pin that this process cannot make (no GPU, or a GPU that a CPU
grade's sandbox keeps the worker from) is counted and done unpinned, so the same get_batch gets the same
grade on any grader."""

from __future__ import annotations

import pytest
import torch

from adapters._instrument import Pinning


@pytest.mark.skipif(torch.cuda.is_available(), reason="a pin succeeds here: the fallback is for a process that cannot")
def test_a_pin_that_cannot_be_made_is_counted_and_done_unpinned(monkeypatch):
    # A GPU machine's CPU grade, scripted: torch reports a GPU (NVML sees one), but pinning raises, as it
    # did in the H100's sandboxed worker. Mistake this catches: deciding by torch.cuda.is_available()
    # alone, which on that machine let every pin raise (a get_batch pinning for every device lost 42
    # points there and 1 on a laptop).
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    batch = torch.arange(12).reshape(3, 4)
    with Pinning() as pinning:
        assert not pinning.emulate
        moved = batch.pin_memory().to("cpu", non_blocking=True)
        made = torch.empty(2, 2, pin_memory=True)
        pinned = batch.is_pinned()
    assert (pinning.pins, pinning.emulate, pinned) == (2, True, False)
    assert torch.equal(moved, batch) and moved.data_ptr() != batch.data_ptr() and made.shape == (2, 2)


def test_nothing_pinned_counts_nothing():
    # Mistake this catches: counting a plain copy or an is_pinned() query as a pin.
    with Pinning() as pinning:
        batch = torch.arange(6).to("cpu", non_blocking=True)
        batch.is_pinned()
        torch.empty(3).clone()
    assert pinning.pins == 0

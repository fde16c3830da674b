"""adapters/_parts.py: Problem 11's stand-ins reach the student's loop under any name and leave nothing behind."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adapters._parts import PooledBatches, stand_ins
from cs336_basics import checkpoint, data, model, optimizer, train

POOL = (torch.arange(24).reshape(3, 2, 4), torch.arange(1, 25).reshape(3, 2, 4))


def test_every_name_is_replaced_under_any_alias_and_put_back():
    originals = (data.get_batch, model.Cruncher, optimizer.AdaGrad, checkpoint.load_checkpoint)
    train.an_alias_of_get_batch = data.get_batch  # a student's `from ... import get_batch as ...`
    try:
        with stand_ins(POOL):
            assert isinstance(data.get_batch, PooledBatches) and train.get_batch is data.get_batch
            assert train.an_alias_of_get_batch is data.get_batch
            assert train.Cruncher is model.Cruncher is not originals[1]
            assert isinstance(train.AdaGrad([torch.nn.Parameter(torch.ones(2))], lr=0.1), torch.optim.Adagrad)
        assert (data.get_batch, model.Cruncher, optimizer.AdaGrad, checkpoint.load_checkpoint) == originals
        assert train.get_batch is originals[0] and train.an_alias_of_get_batch is originals[0]
    finally:
        del train.an_alias_of_get_batch


def test_the_pooled_get_batch_draws_from_the_generator_where_it_is():
    # Catches a stand-in keyed by the generator's seed alone: one generator for a whole run must
    # give the batches a fresh generator per step does not.
    get_batch = PooledBatches(POOL)
    tokens = np.arange(100)
    one = torch.Generator().manual_seed(7)
    fresh = [get_batch(tokens, 2, 4, generator=torch.Generator().manual_seed(7))[0] for _ in range(4)]
    advancing = [get_batch(tokens, 2, 4, generator=one)[0] for _ in range(4)]
    assert all(torch.equal(batch, fresh[0]) for batch in fresh)
    assert not all(torch.equal(batch, advancing[0]) for batch in advancing)
    with pytest.raises(ValueError, match="batch_size, context_length"):
        get_batch(tokens, 3, 4, generator=one)

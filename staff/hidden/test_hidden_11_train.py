"""Hidden tests, Problem 11: other widths, depths, seeds and precisions; resuming at every step and
in mixed precision; a resumed run that keeps its checkpoint schedule; a schedule with nowhere to
save; and step_batch on another vocabulary, with an expected value written here, not drawn from the
student's get_batch. Every test runs the loop with the stand-ins for Problems 6 to 10's parts
(adapters/_parts.py), so only the loop is graded here.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from adapters import train as A
from adapters._parts import StandInCruncher
from tests.checks import VALID_FIRST, check_equal, check_raises, check_tensor, explain
from tests.test_11_train import (
    STAND_INS,
    check_loss_falls,
    check_predicts_next_token,
    check_resumes_exactly,
    described,
    probe_windows,
    saved_files,
    token_file,
    walk_batches,
    walk_tokens,
)

pytestmark = pytest.mark.problem(11)
SEE = "handout/11_train.md"


@pytest.mark.points(1)
@pytest.mark.parametrize("config", [
    {"dim": 8, "num_layers": 0, "seed": 4, "num_steps": 100, "lr": 0.2},
    {"dim": 12, "num_layers": 3, "batch_size": 16, "seed": 9, "num_steps": 100, "mixed_precision": True, "lr": 0.05},
], ids=["head-alone", "deeper-mixed"])
def test_the_loss_falls_for_other_models_and_seeds(tmp_path, config):
    x, y = probe_windows(walk_tokens(20_000, 1024, 2), config["dim"], 1024)
    got = A.run_train(token_file(tmp_path / "data", seed=2), config, probe=x, batches=walk_batches(config, seed=2))
    inputs = f"{described(config)} on walk_tokens(20000, 1024, 2), {STAND_INS}"
    check_equal(got["learning_rates"], [config["lr"]], inputs=inputs, see=f"{SEE} §11.2",
                what="the lr of the optimizer's param groups (AdaGrad(model.parameters(), lr=config.lr))")
    check_loss_falls(got["losses"], steps=100, inputs=inputs, section="§11.2")
    check_predicts_next_token(got["probe_predictions"], y, inputs=f"{inputs}, then 64 windows of the walk",
                              section="§11.2")


@pytest.mark.points(1)
def test_resuming_at_every_step_is_bit_identical(tmp_path):
    check_resumes_exactly(tmp_path, {"num_steps": 5, "dim": 6, "checkpoint_every": 1}, [1, 2, 3, 4, 5], "§11.3")


@pytest.mark.points(1)
def test_resuming_in_mixed_precision_is_bit_identical(tmp_path):
    check_resumes_exactly(tmp_path, {"num_steps": 7, "checkpoint_every": 3, "mixed_precision": True}, [3, 6],
                          "§11.4")


@pytest.mark.points(1)
def test_a_resumed_run_keeps_its_checkpoint_schedule(tmp_path):
    config = {"num_steps": 11, "checkpoint_every": 4}
    data = token_file(tmp_path / "data")
    first, second = tmp_path / "first", tmp_path / "second"
    batches = walk_batches(config)
    A.run_train(data, {**config, "num_steps": 4}, checkpoint_dir=str(first), batches=batches)
    got = A.run_train(data, config, checkpoint_dir=str(second), resume_from=str(first / "step_000004.pt"),
                      batches=batches)
    inputs = f"{described(config)}, resumed from step_000004.pt into a new checkpoint_dir, {STAND_INS}"
    check_equal(saved_files(second), ["step_000008.pt"], inputs=inputs, see=f"{SEE} §11.3",
                what="the files the resumed run saved (steps 8 is the only multiple of 4 in 5..11)")
    check_equal(len(got["losses"]), 7, inputs=inputs, see=f"{SEE} §11.3", what="losses of the resumed run (steps 4-10)")
    # Resumed at a step off the schedule (a checkpoint saved every 5 steps, then every 4): the
    # schedule counts the steps done, not the steps this call ran, so a counter started at the resume
    # (or len(losses)) saves at the wrong steps, though it is right whenever the resume is on a multiple.
    config = {"num_steps": 13, "checkpoint_every": 4}
    third, fourth = tmp_path / "third", tmp_path / "fourth"
    A.run_train(data, {**config, "num_steps": 5, "checkpoint_every": 5}, checkpoint_dir=str(third), batches=batches)
    got = A.run_train(data, config, checkpoint_dir=str(fourth), resume_from=str(third / "step_000005.pt"),
                      batches=batches)
    inputs = (f"{described(config)}, resumed from step_000005.pt (a run of 5 steps saving every 5) into a new "
              f"checkpoint_dir, {STAND_INS}")
    check_equal(saved_files(fourth), ["step_000008.pt", "step_000012.pt"], inputs=inputs, see=f"{SEE} §11.3",
                what="the files the resumed run saved (8 and 12 are the multiples of 4 in 6..13 steps done; the "
                     "schedule counts steps done, not the steps since the resume)")
    check_equal(len(got["losses"]), 8, inputs=inputs, see=f"{SEE} §11.3", what="losses of the resumed run (steps 5-12)")


@pytest.mark.points(1)
def test_a_checkpoint_schedule_without_a_folder_raises_value_error(tmp_path):
    data, batches = token_file(tmp_path / "data"), walk_batches({})
    check_equal(len(A.run_train(data, {"num_steps": 4}, None, batches=batches)["losses"]), 4, what=VALID_FIRST,
                see=f"{SEE} §11.3",
                inputs=f"TrainConfig(num_steps=4), checkpoint_dir=None, {STAND_INS}: no schedule, nothing to save")
    for every in (1, 2):  # 1, the smallest schedule, catches a check written as checkpoint_every > 1
        check_raises(ValueError, lambda *args: A.run_train(*args, batches=batches), data,
                     {"num_steps": 4, "checkpoint_every": every}, None, see=f"{SEE} §11.3",
                     what=f"train with checkpoint_every={every} and checkpoint_dir=None, {STAND_INS}")


@pytest.mark.points(1)
def test_step_batch_of_the_only_window(tmp_path):
    vocab, dim = 1000, 5
    tokens = np.array([999, 0, 17, 500, 3, 998], dtype=np.uint16)  # dim + 1 tokens: one valid window
    config = {"dim": dim, "batch_size": 3, "vocab_size": vocab, "seed": 11}
    window = torch.tensor(tokens.astype(np.float32))
    only = torch.from_numpy(tokens.astype(np.int64)).expand(1, 3, dim + 1)  # a pool of one batch
    got = A.run_step_batch(tokens, config, 2, batches=(only[..., :dim].contiguous(), only[..., 1:].contiguous()))
    inputs = f"tokens {tokens.tolist()}, {described(config)}, step 2, {STAND_INS}"
    check_tensor(got["x"], (window[:dim] / vocab).expand(3, dim).contiguous(), rtol=1e-6, inputs=inputs,
                 see=f"{SEE} §11.1", what="x: every row is the only window, tokens / vocab_size")
    check_tensor(got["y"], torch.full((3,), 998 / vocab, dtype=torch.float32), rtol=1e-6, inputs=inputs,
                 see=f"{SEE} §11.1", what="y: the token after the window / vocab_size")


@pytest.mark.points(1)
def test_mixed_precision_reports_the_float32_loss(tmp_path):
    # Catches a loss computed in bfloat16 (the target cast to the prediction's dtype, so that the
    # subtraction "matches"): y is rounded to 8 significant bits, and the loss and its record are
    # bfloat16, about 3 significant digits. §11.4: the loss stays float32, from prediction.float().
    # Expected: the untrained model (a 0-step run, same seed) on step 0's batch, its forward under the
    # same autocast, the loss computed here in float32. Two models, so that a bfloat16 loss cannot
    # land within the tolerance of both by chance.
    data, tokens = token_file(tmp_path / "data"), walk_tokens(20_000, 1024, 0)
    for config in ({"num_steps": 1, "mixed_precision": True, "seed": 3},
                   {"num_steps": 1, "mixed_precision": True, "seed": 8, "dim": 10, "num_layers": 3, "batch_size": 7}):
        batches = walk_batches(config)
        untrained = A.run_train(data, {**config, "num_steps": 0}, batches=batches)["parameters"]
        batch = A.run_step_batch(tokens, config, 0, batches=batches)
        model = StandInCruncher(config.get("dim", 16), config.get("num_layers", 2))
        model.load_state_dict(untrained)
        with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            prediction = model(batch["x"])
        expected = (prediction.float() - batch["y"]).square().mean().item()
        run = A.run_train(data, config, batches=batches)
        # Also catches losses kept as tensors (losses.append(loss), or loss.detach()): the adapter reads
        # them as floats, but a kept loss tensor holds its step's graph (or at least a tensor) alive, and
        # §11.2 and the docstring ask for one Python float per step, loss.item().
        check_equal(run["loss_types"], ["float"], what="the type of each loss train returned (a Python float, "
                    "loss.item(): a tensor kept in the list keeps its step's memory alive)",
                    inputs=f"{described(config)}, {STAND_INS}", see=f"{SEE} §11.2")
        got = run["losses"][0]
        assert math.isclose(got, expected, rel_tol=1e-5), explain(
            "the first loss of a mixed-precision run: mean((prediction.float() - y) ** 2) in float32, over step 0's "
            "batch, the forward under torch.autocast(bfloat16) (this test assumes a 0-step run with the same seed "
            "builds the same model, test_the_seed_decides_the_run's property)",
            inputs=f"{described(config)}, {STAND_INS}", expected=expected, got=got, see=f"{SEE} §11.4")

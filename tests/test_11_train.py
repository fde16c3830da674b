"""Problem 11: a training run put together from Problems 7-10. The data is a random walk over
token values (written here, from a seeded numpy generator), so the next token is learnable from the
window before it; every run is small enough to take well under a second on a laptop CPU.

Most tests grade the loop alone: they pass `batches` (drawn here, `drawn_batches`), and your train.py
then runs with torch's stand-ins for the earlier problems' parts (adapters/_parts.py), so a mistake
there costs points in its own problem, not here. `test_the_loss_falls` and
`test_training_holds_the_bytes_per_parameter_problem_1_predicts` run your whole stack."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from adapters import train as A
from adapters._tf32 import float32_matmuls
from tests.checkpoint_file import read_checkpoint
from tests.checks import check_equal, check_tensor, explain, write_token_file

pytestmark = pytest.mark.problem(11)
SEE = "handout/11_train.md"
VOCAB = 1024
# The walk's next token is the last one plus -1, 0 or +1, so even a perfect predictor is off by
# 2/3 / VOCAB^2 ~ 6e-7 in mean squared error. Over 200 seeds (each another initialization and data
# order) the reference's mean of the last 10 losses had a median of 4e-6 and a worst case of 1.4e-4
# (float32, 100 steps, and bfloat16, 40 steps); an untrained model sits near 0.1 to 1.
LOSS_BOUND = 1e-3
# What AdaGrad training holds per parameter whatever the matmul precision: a float32 weight, its
# float32 gradient and the float32 g2 (Problem 1's bytes_per_parameter("adagrad", "float32")).
HELD_BYTES_PER_PARAMETER = 4 + 4 + 4
# TrainConfig's defaults that decide which batches a run draws (handout/11_train.md).
DEFAULTS = {"dim": 16, "batch_size": 32, "num_steps": 100, "seed": 0}
STAND_INS = "with stand-ins for Problems 6-10's parts (torch's Linear, Adagrad, save and load; batches drawn here)"


def walk_tokens(num_tokens: int, vocab_size: int, seed: int) -> np.ndarray:
    """A random walk over 0 .. vocab_size - 1 that starts in the middle and moves -1, 0 or +1 per
    token, reflected at both ends, as uint16."""
    steps = np.random.default_rng(seed).integers(-1, 2, num_tokens)
    position = vocab_size // 2 + np.cumsum(steps)
    period = 2 * (vocab_size - 1)
    folded = np.mod(position, period)
    return np.where(folded < vocab_size, folded, period - folded).astype(np.uint16)


def token_file(folder: Path, num_tokens: int = 20_000, vocab_size: int = VOCAB, seed: int = 0) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "walk.u16"
    return write_token_file(path, walk_tokens(num_tokens, vocab_size, seed).tobytes())  # see write_token_file


def walk_batches(config: dict, num_tokens: int = 20_000, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """drawn_batches of the walk token_file writes with the same arguments."""
    return drawn_batches(walk_tokens(num_tokens, VOCAB, seed), config)


def drawn_batches(tokens: np.ndarray, config: dict, count: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    """The pool the stand-in get_batch picks from in a run of `config` on `tokens` (one batch per pick
    of torch.randint(count, (1,), generator=g)): `count` batches of windows of dim + 1 tokens at
    starts drawn by numpy's generator, as int64 (inputs, targets) of shape (count, batch_size, dim)."""
    settings = {**DEFAULTS, **config}
    dim, batch_size = settings["dim"], settings["batch_size"]
    starts = np.random.default_rng(settings["seed"]).integers(0, len(tokens) - dim, (count, batch_size))
    windows = torch.from_numpy(np.stack([[tokens[s:s + dim + 1] for s in row] for row in starts]).astype(np.int64))
    return windows[..., :-1].contiguous(), windows[..., 1:].contiguous()


def picked(pool: tuple[torch.Tensor, torch.Tensor], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch of the pool the stand-in get_batch gives a new generator seeded with `seed`."""
    index = int(torch.randint(len(pool[0]), (1,), generator=torch.Generator().manual_seed(seed)))
    return pool[0][index], pool[1][index]


def saved_files(folder: Path, most: int = 1000) -> list[str] | str:
    """The names in a checkpoint folder the student's code was to create, or what is wrong with it. A link
    is not listed (the grader would list wherever it points, as its own user): the folder is opened once
    without following one, and listed through that descriptor, so code still running cannot swap the
    folder for a link between a look and the listing. More than `most` names are not listed."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return f"no folder {folder}"
    except OSError as error:  # a link fails with ELOOP, or ENOTDIR where O_DIRECTORY is judged first
        return f"{folder} is a link, not a folder" if os.path.islink(folder) else f"{folder}: {error.strerror}"
    try:
        names = []
        with os.scandir(fd) as entries:
            for entry in entries:
                if len(names) == most:
                    return f"{folder} holds more than {most} names"
                names.append(entry.name)
        return sorted(names)
    finally:
        os.close(fd)


def described(config: dict) -> str:
    return "TrainConfig(" + ", ".join(f"{key}={value!r}" for key, value in config.items()) + ")"


def check_loss_falls(losses: list[float], *, steps: int, inputs: str, section: str) -> None:
    check_equal(len(losses), steps, what="how many losses train returned (one per step run)", inputs=inputs,
                see=f"{SEE} {section}")
    finite = all(math.isfinite(loss) for loss in losses)
    assert finite, explain("every loss must be finite", inputs=inputs, expected="finite floats",
                           got=[loss for loss in losses if not math.isfinite(loss)][:5], see=f"{SEE} {section}")
    tail = sum(losses[-10:]) / 10
    assert tail < LOSS_BOUND, explain(
        f"the mean loss of the last 10 of {steps} steps", inputs=inputs, expected=f"below {LOSS_BOUND:g}",
        got=f"{tail:.3g} (first loss {losses[0]:.3g})", see=f"{SEE} {section}")


@pytest.mark.points(1)
@pytest.mark.parametrize("step", [0, 7])
def test_step_batch_is_get_batch_seeded_with_seed_plus_step(step):
    config = {"dim": 8, "batch_size": 5, "seed": 3}
    tokens = walk_tokens(2000, VOCAB, 1)
    batches = drawn_batches(tokens, config)
    inputs, targets = picked(batches, 3 + step)
    got = A.run_step_batch(tokens, config, step, batches=batches)
    described_inputs = f"walk_tokens(2000, {VOCAB}, 1), {described(config)}, step {step}, {STAND_INS}"
    see = f"{SEE} §11.1"
    check_tensor(got["x"], inputs.to(torch.float32) / VOCAB, rtol=1e-6, inputs=described_inputs, see=see,
                 what=f"x against get_batch's inputs for a generator seeded with seed + step = {3 + step}, "
                      "/ vocab_size")
    check_tensor(got["y"], targets[:, -1].to(torch.float32) / VOCAB, rtol=1e-6, inputs=described_inputs, see=see,
                 what="y against get_batch's targets[:, -1] / vocab_size (the token after each window)")


def probe_windows(tokens: np.ndarray, dim: int, vocab_size: int, count: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """count windows spread evenly over the tokens, as a model sees them: x (count, dim) = the window
    / vocab_size, y (count,) = the token after it / vocab_size."""
    starts = np.linspace(0, len(tokens) - dim - 1, count).astype(np.int64)
    windows = np.stack([tokens[start:start + dim + 1] for start in starts]).astype(np.float32) / vocab_size
    return torch.from_numpy(windows[:, :dim]).contiguous(), torch.from_numpy(windows[:, dim]).contiguous()


def check_predicts_next_token(predictions, y: torch.Tensor, *, inputs: str, section: str) -> None:
    """The trained model's predictions for probe windows against the tokens that follow them: a loss
    can fall while the model learns something else (a sign error in the loss teaches it -y)."""
    shape = tuple(predictions.shape) if isinstance(predictions, torch.Tensor) else type(predictions).__name__
    check_equal(shape, tuple(y.shape), inputs=inputs, see=f"{SEE} {section}",
                what="the shape of the trained model's predictions for the probe windows (one number per window)")
    error = (predictions.double() - y.double()).square().mean().item()
    assert error < LOSS_BOUND, explain(
        "mean squared error of the trained model's predictions against the token after each probe window",
        inputs=inputs, expected=f"below {LOSS_BOUND:g}",
        got=f"{error:.3g}; first predictions {predictions[:3].tolist()} for y {y[:3].tolist()}",
        see=f"{SEE} {section}")


def check_first_loss_is_the_mse(data: str, tokens: np.ndarray, config: dict, first_loss: float, *, inputs: str,
                                section: str) -> None:
    """The first loss train reported against mean((prediction - y) ** 2) of the untrained model (a run
    of 0 steps with the same seed) on step 0's batch: a sum, a halved mean or a sign error in the loss
    still falls, but starts elsewhere."""
    batch = A.run_step_batch(tokens, config, 0)
    untrained = A.run_train(data, {**config, "num_steps": 0}, probe=batch["x"])["probe_predictions"]
    expected = (untrained.double() - batch["y"].double()).square().mean().item()
    assert math.isclose(first_loss, expected, rel_tol=1e-5), explain(
        "the first loss: mean((prediction - y) ** 2) over step 0's batch, before any update",
        inputs=f"{inputs}; the untrained model is a 0-step run with the same seed", expected=expected,
        got=first_loss, see=f"{SEE} {section}")


@pytest.mark.points(2)
def test_the_loss_falls(tmp_path):
    # Your whole stack, Problems 6 to 10 included: part of this problem's small integration share.
    config = {"num_steps": 100}
    tokens = walk_tokens(20_000, VOCAB, 0)
    x, y = probe_windows(tokens, 16, VOCAB)
    data = token_file(tmp_path / "data")
    got = A.run_train(data, config, probe=x)
    inputs = f"{described(config)} on walk_tokens(20000, {VOCAB}, 0)"
    check_loss_falls(got["losses"], steps=100, inputs=inputs, section="§11.2")
    check_predicts_next_token(got["probe_predictions"], y, inputs=f"{inputs}, then 64 windows of the walk",
                              section="§11.2")
    check_first_loss_is_the_mse(data, tokens, config, got["losses"][0], inputs=inputs, section="§11.2")


@pytest.mark.points(1)
def test_the_seed_decides_the_run(tmp_path):
    data = token_file(tmp_path / "data")
    config = {"num_steps": 3, "seed": 5}
    batches = walk_batches(config)
    first, again = (A.run_train(data, config, batches=batches)["losses"] for _ in range(2))
    check_equal(again, first, inputs=f"{described(config)}, twice, {STAND_INS}", see=f"{SEE} §11.2",
                what="the losses of a second run with the same seed (set_seed(config.seed), then build the model)")
    other = A.run_train(data, {**config, "seed": 6}, batches=batches)["losses"]
    assert other[0] != first[0], explain("the first loss with seed 6 against seed 5",
                                         inputs=f"{described(config)}, {STAND_INS}",
                                         expected="different (another initialization)", got=other[0],
                                         see=f"{SEE} §11.2")


@pytest.mark.points(1)
def test_gradients_are_set_to_none_after_each_step(tmp_path):
    config = {"num_steps": 5}
    got = A.run_train(token_file(tmp_path / "data"), config, batches=walk_batches(config))
    inputs = f"{described(config)}, {STAND_INS}, then the model's parameters' .grad"
    check_equal(got["gradients_left"], [], inputs=inputs, see=f"{SEE} §11.2",
                what="parameters whose .grad is not None after train (zero_grad(set_to_none=True) after each step)")
    check_equal(len(got["steps"]), 5, inputs=inputs, see=f"{SEE} §11.2",
                what="optimizer steps taken (one per training step)")


@pytest.mark.points(1)
def test_checkpoints_are_saved_every_n_steps(tmp_path):
    config = {"num_steps": 10, "checkpoint_every": 4}
    saved = tmp_path / "checkpoints"
    A.run_train(token_file(tmp_path / "data"), config, checkpoint_dir=str(saved), batches=walk_batches(config))
    inputs = f"{described(config)}, checkpoint_dir={saved}, {STAND_INS}"
    check_equal(saved_files(saved), ["step_000004.pt", "step_000008.pt"], inputs=inputs,
                see=f"{SEE} §11.3", what="the files in checkpoint_dir (checkpoint_path(checkpoint_dir, i + 1))")
    for iteration in (4, 8):
        loaded = read_checkpoint(saved / f"step_{iteration:06d}.pt", inputs=inputs, see=f"{SEE} §11.3")
        got = loaded.get("iteration") if isinstance(loaded, dict) else type(loaded).__name__
        check_equal(got, iteration, inputs=inputs, see=f"{SEE} §11.3",
                    what=f"the \"iteration\" of step_{iteration:06d}.pt (steps done when it was saved)")


def differences(a: dict, b: dict) -> list[str]:
    """Keys at which two flat or two-level dicts of tensors differ, bit for bit."""
    if set(a) != set(b):
        return [f"keys {sorted(a, key=str)} vs {sorted(b, key=str)}"]
    found = []
    for key in a:
        if isinstance(a[key], dict):
            found += [f"{key}/{inner}" for inner in differences(a[key], b[key])]
        elif not (a[key].dtype == b[key].dtype and a[key].shape == b[key].shape and torch.equal(a[key], b[key])):
            found.append(str(key))
    return found


def check_resumes_exactly(folder: Path, config: dict, resume_at: list[int], section: str) -> None:
    """Train config straight through, saving checkpoints; resume from each at `resume_at` in a fresh
    run; the losses after the resume and the final model and optimizer state must match bit for bit.
    Both runs use the stand-ins, so only the loop's own resuming is graded."""
    data, batches = token_file(folder / "data"), walk_batches(config)
    saved = folder / "straight"
    straight = A.run_train(data, config, checkpoint_dir=str(saved), batches=batches)
    for iteration in resume_at:
        again = folder / f"resumed_{iteration}"
        source = saved / f"step_{iteration:06d}.pt"
        got = A.run_train(data, config, checkpoint_dir=str(again), resume_from=str(source), batches=batches)
        inputs = (f"{described(config)}, {STAND_INS}: straight through, against a fresh run resumed from "
                  f"{source.name}")
        check_equal(got["losses"], straight["losses"][iteration:], inputs=inputs, see=f"{SEE} {section}",
                    what=f"the losses of steps {iteration} to {config['num_steps'] - 1}")
        for part in ("parameters", "optimizer_state"):
            diff = differences(got[part], straight[part])
            assert not diff, explain(f"the final {part.replace('_', ' ')}", inputs=inputs, expected="bit-identical",
                                     got=f"differs at {diff[:5]}", see=f"{SEE} {section}")


@pytest.mark.points(3)
def test_resuming_from_each_checkpoint_is_bit_identical(tmp_path):
    check_resumes_exactly(tmp_path, {"num_steps": 12, "checkpoint_every": 4}, [4, 8, 12], "§11.3")


@pytest.mark.points(1)
@pytest.mark.parametrize("mixed_precision", [False, True])
def test_matmuls_run_in_the_chosen_precision(tmp_path, mixed_precision):
    config = {"num_steps": 40, "mixed_precision": mixed_precision}
    got = A.run_train(token_file(tmp_path / "data"), config, batches=walk_batches(config))
    inputs = f"{described(config)}, {STAND_INS}"
    expected = ["bfloat16"] if mixed_precision else ["float32"]
    check_equal(got["matmul_dtypes"], expected, inputs=inputs, see=f"{SEE} §11.4",
                what=f"the dtypes of every matmul's operands, forward and backward ({got['matmuls']} matmuls)")
    kinds = {kind: sorted({d for step in got["steps"] for d in step[f"{kind}_dtypes"]})
             for kind in ("parameter", "gradient", "state")}
    check_equal(kinds, {"parameter": ["float32"], "gradient": ["float32"], "state": ["float32"]}, inputs=inputs,
                see=f"{SEE} §11.4",
                what="dtypes of the parameters, their gradients and the optimizer's state at each step")
    check_loss_falls(got["losses"], steps=40, inputs=inputs, section="§11.4")


@pytest.mark.points(1)
def test_training_holds_the_bytes_per_parameter_problem_1_predicts(tmp_path):
    # Your whole stack (your AdaGrad's g2 is what is held): part of the small integration share.
    config = {"num_steps": 3, "mixed_precision": True}
    got = A.run_train(token_file(tmp_path / "data"), config)
    inputs = f"{described(config)}: parameters + gradients + optimizer state, after each optimizer step"
    check_equal(len(got["steps"]), 3, inputs=inputs, see=f"{SEE} §11.4",
                what="optimizer steps taken (your AdaGrad, one per training step)")
    held = [(s["parameter_bytes"] + s["gradient_bytes"] + s["state_bytes"]) / s["parameters"] for s in got["steps"]]
    check_equal(held, [HELD_BYTES_PER_PARAMETER] * 3, inputs=inputs, see=f"{SEE} §11.4",
                what="bytes held per parameter at each step")


@pytest.mark.cuda
@pytest.mark.points(1)
def test_training_on_gpu_agrees_with_the_cpu_run(tmp_path):
    # Catches a model built on the GPU (another initialization from the same seed), a batch left on
    # the CPU, and autocast told device_type="cpu" while the model runs on the GPU.
    data = token_file(tmp_path / "data")
    config = {"num_steps": 20}
    cpu = A.run_train(data, config)
    with float32_matmuls():  # TF32 off where the run is in this process (a graded worker starts with it off)
        gpu = A.run_train(data, {**config, "device": "cuda"})
    inputs = f"{described(config)} and the same with device='cuda', TF32 off"
    devices = sorted({value.device.type for value in gpu["parameters"].values()})
    check_equal(devices, ["cuda"], what="where the trained model's parameters are", inputs=inputs,
                see=f"{SEE} §11.5")
    # 20 steps of float32 rounding, which differs between the devices' matmuls, on values near 0.1.
    check_tensor(torch.tensor(gpu["losses"]), torch.tensor(cpu["losses"]), atol=1e-6, rtol=1e-4,
                 what="the losses on the GPU against the CPU run", inputs=inputs, see=f"{SEE} §11.5")
    for name, value in cpu["parameters"].items():
        check_tensor(gpu["parameters"][name].cpu(), value, atol=1e-5, rtol=1e-4, inputs=inputs,
                     what=f"parameter {name} after training on the GPU against the CPU run", see=f"{SEE} §11.5")

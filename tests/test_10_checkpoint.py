"""Problem 10: checkpoints and seeds. Training runs here with torch's own model and AdamW
(`adapters.checkpoint.build_training`), on batches that depend only on the step number, so a
straight run and a resumed run see the same data; "the same" means bit-identical."""

from __future__ import annotations

import errno
import fractions
import io
import os
from pathlib import Path

import pytest
import torch

from adapters import checkpoint as A
from adapters._speed import eager_step
from tests.checkpoint_file import read_checkpoint
from tests.checks import check_equal, explain, student_file_bytes, write_new_file

pytestmark = pytest.mark.problem(10)
SEE = "handout/10_checkpoint.md"
DIMS = [6, 16, 3]


def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1000 + step)
    return torch.randn(8, DIMS[0], generator=generator), torch.randn(8, DIMS[-1], generator=generator)


def train(model, optimizer, steps: range) -> None:
    for step in steps:
        x, y = batch(step)
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        eager_step(optimizer)  # optimizer.step(), without importing torch._dynamo


def restored(states: dict | None):
    """A model and AdamW in these states; freshly initialized when None."""
    model, optimizer = A.build_training(DIMS)
    if states is not None:
        model.load_state_dict(states["model"])
        optimizer.load_state_dict(states["optimizer"])
    return model, optimizer


def trained(steps: int, start: dict | None = None):
    model, optimizer = restored(start)
    train(model, optimizer, range(steps))
    return model, optimizer


def differences(a, b, prefix: str = "") -> list[str]:
    """Paths at which two nested state dicts differ (values compared bit for bit)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
        return [] if same else [prefix]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{prefix} keys {sorted(a, key=str)} vs {sorted(b, key=str)}"]
        return [d for key in a for d in differences(a[key], b[key], f"{prefix}/{key}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{prefix}/{i}")]
    return [] if a == b else [prefix]


def check_same_states(got: dict, model, optimizer, *, what: str, inputs: str, section: str) -> None:
    for name, expected in (("model", model.state_dict()), ("optimizer", optimizer.state_dict())):
        diff = differences(got[name], expected)
        assert not diff, explain(f"{what}: the {name}'s state_dict", inputs=inputs, expected="identical",
                                 got=f"differs at {diff[:5]}", see=f"{SEE} {section}")


def check_a_good_file_loads(got: dict) -> None:
    """A good file loaded first must raise nothing: raising for every file is not rejecting the bad
    ones. Its iteration is not checked here (test_save_then_load_a_path does)."""
    check_equal(repr(got["raised"]) if got["raised"] else None, None, inputs="a good checkpoint saved with torch.save",
                what="the error loading a good file first (raising for every file is not rejecting the bad ones)",
                see=f"{SEE} §10.1")


def save_failure(error: Exception, *, inputs: str, own: bool) -> str:
    """The message for a save to a path that raised where it must succeed. A temporary file made
    outside the checkpoint's folder (tempfile.mkstemp() with no dir) cannot be renamed onto it when
    the two folders are on different file systems, as behind the grader; that save then fails every
    time, so every test that saves fails, and each says what it assumes."""
    cross_device = getattr(error, "errno", None) == errno.EXDEV or "cross-device" in str(error).lower()
    if cross_device:
        why = ("the rename crossed file systems: the temporary file must be made in the checkpoint's own folder "
               "(tempfile.mkstemp(dir=...)), so that os.replace stays on one file system")
        premise = "§10.3" if own else (f"§10.3 (this test assumes the save of §10.3: {why}; see "
                                       "test_save_then_load_a_path)")
        return explain(f"save_checkpoint to a path raised: {why}", inputs=inputs, expected="no error",
                       got=repr(error), see=f"{SEE} {premise}")
    premise = "§10.1" if own else "§10.1 (this test assumes a save to a path works; see test_save_then_load_a_path)"
    return explain("save_checkpoint to a path", inputs=inputs, expected="no error", got=repr(error),
                   see=f"{SEE} {premise}")


def must_save(call, *args, inputs: str, own: bool = False, **kwargs):
    """`call(*args, **kwargs)`, a save to a path that must succeed (A.run_save_checkpoint, or another
    adapter that saves); if it raises, a failure that names the premise (see save_failure)."""
    try:
        return call(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - any exception of the student's save: reported, not raised
        failure = error
    raise AssertionError(save_failure(failure, inputs=inputs, own=own))


@pytest.mark.points(2)
def test_save_then_load_a_path(tmp_path):
    model, optimizer = trained(3)
    path = tmp_path / "checkpoint.pt"
    inputs = "a model and AdamW after 3 steps, saved at iteration 3 to a path"
    renames = must_save(A.run_save_checkpoint, DIMS, model.state_dict(), optimizer.state_dict(), 3, str(path),
                    inputs=inputs, own=True)["renames"]
    # the worker reports each source's real path: resolving it here would follow links made since
    elsewhere = [src for src, _ in renames if os.path.dirname(src) != str(tmp_path.resolve())]
    assert not elsewhere, explain("the temporary file renamed onto the checkpoint must be in the same folder",
                                  inputs=inputs, expected=f"a file in {tmp_path}", got=elsewhere, see=f"{SEE} §10.3")
    loaded = read_checkpoint(path, inputs=inputs, see=f"{SEE} §10.1")
    assert isinstance(loaded, dict), explain("torch.load(path, weights_only=True) of the checkpoint", inputs=inputs,
                                             expected="a dict", got=type(loaded).__name__, see=f"{SEE} §10.1")
    got = A.run_load_checkpoint(str(path), DIMS)
    assert got["raised"] is None, explain("load_checkpoint of a checkpoint just saved", inputs=inputs,
                                          expected="no error", got=repr(got["raised"]), see=f"{SEE} §10.1")
    check_equal(got["iteration"], 3, what="the iteration load_checkpoint returns", inputs=inputs, see=f"{SEE} §10.1")
    check_same_states(got, model, optimizer, what="after loading into a fresh model and optimizer", inputs=inputs,
                      section="§10.1")


@pytest.mark.points(1)
def test_save_then_load_a_binary_file_object():
    model, optimizer = trained(2)
    data = A.run_save_checkpoint(DIMS, model.state_dict(), optimizer.state_dict(), 2)["bytes"]
    got = A.run_load_checkpoint(data, DIMS)
    inputs = "saved to and loaded from io.BytesIO at iteration 2"
    assert got["raised"] is None, explain("load_checkpoint from a file object", inputs=inputs, expected="no error",
                                          got=repr(got["raised"]), see=f"{SEE} §10.1")
    # The iteration loaded back is test_save_then_load_a_path's: this test checks the states.
    check_same_states(got, model, optimizer, what="after loading", inputs=inputs, section="§10.1")


@pytest.mark.points(3)
def test_resumed_training_is_bit_identical(tmp_path):
    fresh_model, fresh_optimizer = A.build_training(DIMS)
    start = {"model": fresh_model.state_dict(), "optimizer": fresh_optimizer.state_dict()}
    straight_model, straight_optimizer = trained(6, start)
    model, optimizer = trained(3, start)
    path = tmp_path / "checkpoint.pt"
    must_save(A.run_save_checkpoint, DIMS, model.state_dict(), optimizer.state_dict(), 3, str(path),
          inputs="3 steps, then a save to a path")
    got = A.run_load_checkpoint(str(path), DIMS)
    assert got["raised"] is None, explain("load_checkpoint", inputs=str(path), expected="no error",
                                          got=repr(got["raised"]), see=f"{SEE} §10.2")
    model, optimizer = restored(got)
    # Steps 3 to 5 whatever iteration load returned: that is test_save_then_load_a_path's to check.
    train(model, optimizer, range(3, 6))
    inputs = "6 steps straight, against 3 steps, save, load into a fresh model and AdamW, steps 3 to 5"
    check_same_states({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, straight_model,
                      straight_optimizer, what="after resuming", inputs=inputs, section="§10.2")


@pytest.mark.points(2)
def test_a_save_that_fails_part_way_leaves_the_previous_checkpoint(tmp_path):
    model, optimizer = trained(1)
    path = tmp_path / "checkpoint.pt"
    must_save(A.run_save_checkpoint, DIMS, model.state_dict(), optimizer.state_dict(), 1, str(path),
          inputs="the first save, at iteration 1, to a path (before the save made to fail)")
    before = student_file_bytes(path)
    train(model, optimizer, range(1, 2))
    raised = None
    try:
        A.run_save_checkpoint(DIMS, model.state_dict(), optimizer.state_dict(), 2, str(path), fail_midway=True)
    except Exception as error:  # noqa: BLE001 - any exception: the save was made to fail
        raised = error
    inputs = "save at iteration 1, then a save at iteration 2 whose optimizer state cannot be pickled"
    assert raised is not None, explain("the failing save", inputs=inputs, expected="an exception", got="returned",
                                       see=f"{SEE} §10.3")
    assert student_file_bytes(path) == before, explain("the checkpoint file after a failed save", inputs=inputs,
                                                expected="the iteration-1 checkpoint, unchanged",
                                                got="different bytes (write to a temporary file, then rename it)",
                                                see=f"{SEE} §10.3")
    check_equal(sorted(p.name for p in tmp_path.iterdir()), ["checkpoint.pt"], inputs=inputs, see=f"{SEE} §10.3",
                what="files in the folder after the failed save (no temporary file left behind)")


BAD_FILES = ["truncated", "not a torch file", "a torch file without the keys", "no optimizer entry",
             "another optimizer's state", "another model's checkpoint", "a model state missing a tensor",
             "an object weights_only refuses"]


def write_bad_file(path: Path, kind: str) -> None:
    """A file that load_checkpoint must refuse; most of them hold this model's weights after 2 steps."""
    model, optimizer = trained(2)
    good = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 2}
    # Written through a buffer: student code has had the folder, so the name may be a link it planted.
    buffer = io.BytesIO()
    if kind == "truncated":
        torch.save(good, buffer)
        buffer = io.BytesIO(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    elif kind == "not a torch file":
        buffer.write(b"step,loss\n1,0.5\n")
    elif kind == "a torch file without the keys":
        torch.save({"weights": model.state_dict()}, buffer)
    elif kind == "no optimizer entry":
        torch.save({"model": good["model"], "iteration": 2}, buffer)
    elif kind == "another optimizer's state":
        torch.save({**good, "optimizer": {"state": {}, "param_groups": []}}, buffer)
    elif kind == "another model's checkpoint":
        other_model, other_optimizer = A.build_training([DIMS[0], 16, 16, DIMS[-1]])
        torch.save({"model": other_model.state_dict(), "optimizer": other_optimizer.state_dict(), "iteration": 2},
                   buffer)
    elif kind == "a model state missing a tensor":
        torch.save({**good, "model": {k: v for k, v in good["model"].items() if k != "0.bias"}}, buffer)
    else:  # a Fraction is not on weights_only's list of safe types
        torch.save({**good, "iteration": fractions.Fraction(2, 1)}, buffer)
    write_new_file(path, buffer.getvalue())


@pytest.mark.points(1)
@pytest.mark.parametrize("kind", BAD_FILES)
def test_loading_a_bad_file_raises_value_error_and_changes_nothing(tmp_path, kind):
    good = tmp_path / "good.pt"
    model, optimizer = trained(1)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 1}, good)
    check_a_good_file_loads(A.run_load_checkpoint(str(good), DIMS))
    path = tmp_path / "bad.pt"
    write_bad_file(path, kind)
    start_model, start_optimizer = trained(1)
    got = A.run_load_checkpoint(str(path), DIMS, start_model.state_dict(), start_optimizer.state_dict())
    inputs = f"load_checkpoint of {kind} into a model and AdamW after 1 step"
    assert isinstance(got["raised"], ValueError), explain(
        "loading a bad checkpoint", inputs=inputs, expected="ValueError naming the file",
        got=repr(got["raised"]) if got["raised"] else f"returned {got['iteration']!r}", see=f"{SEE} §10.3")
    assert str(path) in str(got["raised"]), explain("the error message", inputs=inputs, expected=f"mentions {path}",
                                                    got=str(got["raised"]), see=f"{SEE} §10.3")
    check_same_states(got, start_model, start_optimizer, what="after the failed load", inputs=inputs,
                      section="§10.3")


@pytest.mark.points(2)
def test_set_seed_seeds_torch_numpy_and_random():
    first, again, other = A.run_set_seed_then_draw(7, 4), A.run_set_seed_then_draw(7, 4), A.run_set_seed_then_draw(8, 4)
    for library in ("torch", "numpy", "random"):
        inputs = f"set_seed(7), 4 draws from {library}; set_seed(7) again, 4 draws; set_seed(8), 4 draws"
        check_equal(again[library], first[library], what=f"{library}: the same seed gives the same draws",
                    inputs=inputs, see=f"{SEE} §10.4")
        assert other[library] != first[library], explain(f"{library}: another seed gives other draws", inputs=inputs,
                                                          expected="different draws", got=other[library],
                                                          see=f"{SEE} §10.4")

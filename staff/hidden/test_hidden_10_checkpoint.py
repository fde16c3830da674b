"""Hidden tests, Problem 10: iterations of any size, pathlib paths, saving over an old checkpoint,
what the file holds, extra entries, a tensor of the wrong shape, a checkpoint that reaches the disk
before it replaces the old one, and seeds that match each library's own seeding. Training runs use
torch's own model and AdamW, as in the public tests.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from adapters import checkpoint as A
from tests.checkpoint_file import read_checkpoint
from tests.checks import check_equal, check_tensor, explain, student_file_bytes
from tests.test_10_checkpoint import DIMS, check_a_good_file_loads, check_same_states, must_save, trained

pytestmark = pytest.mark.problem(10)
SEE = "handout/10_checkpoint.md"


def states(model, optimizer) -> tuple[dict, dict]:
    return model.state_dict(), optimizer.state_dict()


@pytest.mark.points(1)
def test_iterations_of_any_size_round_trip(tmp_path):
    model, optimizer = trained(1)
    for iteration in (0, 1, 2**40 + 3):
        path = tmp_path / f"at-{iteration}.pt"
        must_save(A.run_save_checkpoint, DIMS, *states(model, optimizer), iteration, str(path),
              inputs=f"a save at iteration {iteration} to a path")
        got = A.run_load_checkpoint(str(path), DIMS)
        check_equal((got["iteration"], repr(got["raised"]) if got["raised"] else None), (iteration, None),
                    what="(iteration loaded back, error)", inputs=f"saved at iteration {iteration}", see=f"{SEE} §10.1")


@pytest.mark.points(1)
def test_pathlib_paths_are_paths(tmp_path):
    model, optimizer = trained(2)
    path = tmp_path / "checkpoint.pt"
    must_save(A.run_save_checkpoint, DIMS, *states(model, optimizer), 2, str(path), as_path_object=True,
          inputs="save_checkpoint(..., pathlib.Path(...))")
    got = A.run_load_checkpoint(str(path), DIMS, as_path_object=True)
    inputs = "save_checkpoint(..., pathlib.Path(...)), then load_checkpoint(pathlib.Path(...), ...)"
    assert got["raised"] is None, explain("load_checkpoint of a pathlib.Path", inputs=inputs, expected="no error",
                                          got=repr(got["raised"]), see=f"{SEE} §10.1")
    check_same_states(got, model, optimizer, what="after loading", inputs=inputs, section="§10.1")


@pytest.mark.points(1)
def test_saving_over_an_old_checkpoint_replaces_it_and_leaves_one_file(tmp_path):
    path = tmp_path / "checkpoint.pt"
    must_save(A.run_save_checkpoint, DIMS, *states(*trained(1)), 1, str(path),
              inputs="a save at iteration 1 to a path")
    model, optimizer = trained(3)
    must_save(A.run_save_checkpoint, DIMS, *states(model, optimizer), 3, str(path),
          inputs="a save at iteration 1, then one at iteration 3 to the same path")
    inputs = "a save at iteration 1, then one at iteration 3 to the same path"
    check_equal(sorted(p.name for p in tmp_path.iterdir()), ["checkpoint.pt"], inputs=inputs, see=f"{SEE} §10.3",
                what="files in the folder after two saves (no temporary file left behind)")
    got = A.run_load_checkpoint(str(path), DIMS)
    check_same_states(got, model, optimizer, what="after loading the newer checkpoint", inputs=inputs,
                      section="§10.3")


@pytest.mark.points(1)
def test_the_file_holds_the_three_entries(tmp_path):
    path = tmp_path / "checkpoint.pt"
    must_save(A.run_save_checkpoint, DIMS, *states(*trained(2)), 2, str(path),
              inputs="a save at iteration 2 to a path")
    inputs = "torch.load(checkpoint, weights_only=True) of a save at iteration 2"
    loaded = read_checkpoint(path, inputs=inputs, see=f"{SEE} §10.1")
    check_equal((type(loaded).__name__, sorted(loaded, key=str) if isinstance(loaded, dict) else None),
                ("dict", ["iteration", "model", "optimizer"]), what="(type, keys) of what the file holds",
                inputs=inputs, see=f"{SEE} §10.1")
    check_equal((type(loaded["iteration"]).__name__, loaded["iteration"]), ("int", 2),
                what="the iteration entry (a Python int)", inputs=inputs, see=f"{SEE} §10.1")


@pytest.mark.points(1)
def test_a_checkpoint_with_extra_entries_still_loads(tmp_path):
    model, optimizer = trained(2)
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 2,
                "notes": "lr schedule step 2", "loss": torch.tensor(0.25)}, path)
    got = A.run_load_checkpoint(str(path), DIMS)
    inputs = "a checkpoint holding model, optimizer, iteration, and two more entries"
    assert got["raised"] is None, explain("load_checkpoint", inputs=inputs, expected="no error (extra entries are "
                                          "fine)", got=repr(got["raised"]), see=f"{SEE} §10.1")
    check_same_states(got, model, optimizer, what="after loading", inputs=inputs, section="§10.1")


@pytest.mark.points(1)
def test_a_tensor_of_the_wrong_shape_changes_nothing(tmp_path):
    model, optimizer = trained(2)
    bad_model = dict(model.state_dict())
    bad_model["0.weight"] = torch.zeros(17, DIMS[0])
    path = tmp_path / "bad.pt"
    torch.save({"model": bad_model, "optimizer": optimizer.state_dict(), "iteration": 2}, path)
    good = tmp_path / "good.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 2}, good)
    check_a_good_file_loads(A.run_load_checkpoint(str(good), DIMS))
    start_model, start_optimizer = trained(1)
    got = A.run_load_checkpoint(str(path), DIMS, *states(start_model, start_optimizer))
    inputs = "a checkpoint whose optimizer state fits but whose first weight is (17, 6), into a model after 1 step"
    assert isinstance(got["raised"], ValueError), explain("loading it", inputs=inputs, expected="ValueError",
                                                          got=repr(got["raised"]), see=f"{SEE} §10.3")
    check_same_states(got, start_model, start_optimizer, what="after the failed load (the optimizer too, whatever "
                      "was loaded first)", inputs=inputs, section="§10.3")


@pytest.mark.points(1)
def test_the_checkpoint_reaches_the_disk_before_it_replaces_the_old_one(tmp_path):
    got = must_save(A.run_save_checkpoint, DIMS, *states(*trained(1)), 1, str(tmp_path / "checkpoint.pt"),
                inputs="save_checkpoint to a path")
    check_equal(got["synced"], True, what="the temporary file, every byte of it (f.flush(), then os.fsync), on disk "
                "before the rename; "
                "otherwise a power cut can leave an empty file under the checkpoint's name",
                inputs="save_checkpoint to a path", see=f"{SEE} §10.3")


@pytest.mark.points(1)
def test_set_seed_matches_each_library_s_own_seeding():
    for seed in (0, 12345, 2**32 - 1):
        got = A.run_set_seed_then_draw(seed, 3)
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        expected = {"torch": torch.rand(3).tolist(), "numpy": np.random.rand(3).tolist(),
                    "random": [random.random() for _ in range(3)]}
        check_equal(got, expected, what="draws after set_seed(seed): each library seeded with the seed itself",
                    inputs=f"seed={seed}", see=f"{SEE} §10.4")


@pytest.mark.points(1)
def test_a_torch_file_that_is_not_a_dict_raises_value_error(tmp_path):
    model, optimizer = trained(1)
    good = tmp_path / "good.pt"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 1}, good)
    check_a_good_file_loads(A.run_load_checkpoint(str(good), DIMS))
    for name, content in [("a tensor", torch.arange(3)), ("a list", [model.state_dict(), 1])]:
        path = tmp_path / f"{name.split()[-1]}.pt"
        torch.save(content, path)
        got = A.run_load_checkpoint(str(path), DIMS, *states(model, optimizer))
        inputs = f"load_checkpoint of a torch file holding {name}"
        assert isinstance(got["raised"], ValueError), explain("loading it", inputs=inputs,
                                                              expected="ValueError naming the file",
                                                              got=repr(got["raised"]), see=f"{SEE} §10.3")
        check_same_states(got, model, optimizer, what="after the failed load", inputs=inputs, section="§10.3")


@pytest.mark.points(1)
def test_a_checkpoint_saved_to_a_bare_file_name(tmp_path):
    # Catches os.makedirs(os.path.dirname(out)): a bare name such as "ckpt.pt" has the folder "",
    # which os.makedirs rejects; a temporary file must also go in the working folder.
    model, optimizer = trained(2)
    inputs = "save_checkpoint(model, optimizer, 2, 'ckpt.pt') in the working folder, then load_checkpoint('ckpt.pt')"
    got = must_save(A.run_save_and_load_in_the_working_folder, DIMS, model.state_dict(), optimizer.state_dict(), 2,
                str(tmp_path), "ckpt.pt", inputs=inputs)
    check_equal(got["files"], ["ckpt.pt"], what="files in the working folder afterwards (no temporary file left)",
                inputs=inputs, see=f"{SEE} §10.3")
    for name, tensor in model.state_dict().items():
        check_tensor(got["model"][name], tensor, what=f"model {name} loaded back", inputs=inputs, see=f"{SEE} §10.1")


@pytest.mark.points(1)
def test_a_failed_save_to_any_path_type_leaves_the_old_checkpoint(tmp_path):
    # Catches a save that writes atomically only for a str (or only for str and pathlib.Path) and
    # hands any other path straight to torch.save: out may be any os.PathLike (§10.3).
    shown = {"path": "a pathlib.Path", "pathlike": "an os.PathLike that is neither a str nor a pathlib.Path "
             "(an object with __fspath__)"}
    # One folder, the test's own (the worker may write only there, not in a folder the grader makes).
    saved: list[str] = []
    for kind in shown:
        path = tmp_path / f"checkpoint-{kind}.pt"
        saved.append(path.name)
        must_save(A.run_save_checkpoint, DIMS, *states(*trained(1)), 1, str(path),
              inputs="the first save, at iteration 1, to a path (before the save made to fail)")
        before = student_file_bytes(path)
        raised = None
        try:
            A.run_save_checkpoint(DIMS, *states(*trained(2)), 2, str(path), fail_midway=True, path_kind=kind)
        except Exception as error:  # noqa: BLE001 - any exception: the save was made to fail
            raised = error
        inputs = (f"a save at iteration 1, then a save at iteration 2 to {shown[kind]} whose optimizer state cannot "
                  "be pickled")
        assert raised is not None, explain("the failing save", inputs=inputs, expected="an exception", got="returned",
                                           see=f"{SEE} §10.3")
        assert student_file_bytes(path) == before, explain(
            "the checkpoint file after a failed save", inputs=inputs, expected="the iteration-1 checkpoint, unchanged",
            got="different bytes (every path type must be written to a temporary file, then renamed: test "
                "isinstance(out, (str, os.PathLike)), not str alone)", see=f"{SEE} §10.3")
        check_equal(sorted(p.name for p in tmp_path.iterdir()), sorted(saved), inputs=inputs, see=f"{SEE} §10.3",
                    what="files in the folder after the failed save (no temporary file left behind)")


@pytest.mark.points(1)
def test_the_optimizer_steps_the_model_that_was_loaded(tmp_path):
    # Catches a load that gives the model new parameter objects (load_state_dict(..., assign=True), or
    # parameters replaced one by one): the model holds the checkpoint's values, but the optimizer still
    # holds the old parameters, so every later step changes tensors the model no longer uses.
    model, optimizer = trained(2)
    path = tmp_path / "checkpoint.pt"
    must_save(A.run_save_checkpoint, DIMS, *states(model, optimizer), 2, str(path),
              inputs="a save at iteration 2 to a path")
    got = A.run_load_checkpoint(str(path), DIMS)
    inputs = "load_checkpoint of a save at iteration 2 into a fresh model and its AdamW"
    assert got["raised"] is None, explain("load_checkpoint", inputs=inputs, expected="no error",
                                          got=repr(got["raised"]), see=f"{SEE} §10.1")
    saved = model.state_dict()
    restored = set(got["model"]) == set(saved) and all(torch.equal(got["model"][k], v) for k, v in saved.items())
    assert restored, explain(
        "the model's weights after load_checkpoint (this test assumes the load of §10.1 restores them; see "
        "test_save_then_load_a_path)", inputs=inputs, expected="the saved weights", got="other values",
        see=f"{SEE} §10.1")
    check_equal(got["optimizer_steps_the_model"], True, inputs=inputs, see=f"{SEE} §10.1",
                what="after loading, the optimizer's param groups hold the model's own parameters, object for object "
                     "(model.load_state_dict copies the values into them; assign=True or new Parameters leave the "
                     "optimizer stepping tensors the model no longer holds)")

"""Hidden tests, Problem 8: resuming after every step, three parameters in two groups with missing
gradients, float32 parameters, a zero learning rate, the state's shape and dtype, the
accounting at the edges, and an optimizer built from model.parameters() and resumed through
torch.save, as Problems 10 and 11 use it. Expected values come from the lecture's rule written out here.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters import optimizer as A
from tests.checks import call_explained, check_equal, check_tensor, explain
from tests.test_08_adagrad import ASSUMES, adagrad_by_hand, alone, check_training_step_memory
from tests.tolerances import FLOAT32_STEP, FLOAT64

pytestmark = pytest.mark.problem(8)
SEE = "handout/08_adagrad.md"
SHAPES = [(2, 3), (4,), (1, 1, 2)]


def check_state_entry(state: dict, index: int, *, inputs: str) -> None:
    """Fail, naming the premise, where parameter `index`'s state_dict entry has no g2 (§8.2's name)."""
    entry = state.get(index, {})
    assert "g2" in entry, explain(f"parameter {index}'s optimizer state has g2 (this test reads g2, the name §8.2 "
                                  "gives it; see test_adagrad_state_is_named_g2)", inputs=inputs,
                                  expected="an entry 'g2'", got=sorted(entry), see=f"{SEE} §8.2")


def run(steps: int, dtype=torch.float64):
    params = [torch.randn(s, dtype=dtype) for s in SHAPES]
    grads = [[torch.randn(s, dtype=dtype) * 10.0 ** torch.randint(-3, 2, s) for s in SHAPES] for _ in range(steps)]
    return params, grads


@pytest.mark.points(0.5)
def test_resuming_after_any_step_is_bit_identical():
    params, grads = run(5)
    straight = A.run_adagrad(params, grads, lr=0.2)["params"]
    for k in range(6):
        first = A.run_adagrad(params, grads[:k], lr=0.2)
        resumed = A.run_adagrad(first["params"], grads[k:], lr=0.2, state_dict=first["state_dict"])
        inputs = f"5 steps straight, against {k} steps, state_dict(), a new AdaGrad, load_state_dict(), {5 - k} more"
        for i, (a, b) in enumerate(zip(resumed["params"], straight)):
            assert torch.equal(a, b), explain(f"parameter {i} after resuming: bit-identical to the straight run",
                                              inputs=inputs, expected=b, got=a, see=f"{SEE} §8.2")


@pytest.mark.points(1)
def test_two_groups_with_missing_gradients():
    params, grads = run(4)
    grads[0][2] = None
    grads[1][0] = None
    grads[3][1] = None
    got = A.run_adagrad(params, grads, groups=[{"params": [2, 0], "lr": 0.5}, {"params": [1]}], lr=0.03)
    # Each parameter against itself alone in your AdaGrad with its group's lr, over the steps that gave
    # it a gradient: what is tested is the groups and the None gradients, not the update rule.
    expected = [alone(params, grads, 0, 0.5, [0, 2, 3]), alone(params, grads, 1, 0.03, [0, 1, 2]),
                alone(params, grads, 2, 0.5, [1, 2, 3])]
    inputs = ("groups [{params: [p2, p0], lr: 0.5}, {params: [p1]}], AdaGrad(groups, lr=0.03); p2.grad is None in "
              "step 1, p0.grad in step 2, p1.grad in step 4")
    for i, (g, e) in enumerate(zip(got["params"], expected)):
        check_tensor(g, e, **FLOAT64, what=f"parameter {i} after 4 steps, against it alone in an AdaGrad with its "
                     f"group's lr over the steps that gave it a gradient ({ASSUMES})", inputs=inputs,
                     see=f"{SEE} §8.2")


@pytest.mark.points(0.5)
def test_float32_parameters():
    params, grads = run(3, torch.float32)
    got = A.run_adagrad(params, grads, lr=0.1)
    # Against your AdaGrad on the same values in float64: what is tested is that float32 parameters
    # are updated in float32 as well as float64 ones are, not the update rule.
    expected = A.run_adagrad([p.double() for p in params], [[g.double() for g in step] for step in grads],
                             lr=0.1)["params"]
    for i, (g, e) in enumerate(zip(got["params"], expected)):
        check_equal(g.dtype, torch.float32, what=f"dtype of float32 parameter {i} after 3 steps",
                    inputs="float32 parameters and gradients, lr=0.1", see=f"{SEE} §8.1")
        check_tensor(g, e.float(), **FLOAT32_STEP, inputs="float32 parameters and gradients, lr=0.1",
                     what=f"float32 parameter {i} after 3 steps, against your AdaGrad on the same values in float64 "
                          f"({ASSUMES})", see=f"{SEE} §8.1")


@pytest.mark.points(1)
def test_zero_learning_rate_changes_nothing_but_the_state():
    params, grads = run(2)
    got = A.run_adagrad(params, grads, lr=0.0)
    inputs = "AdaGrad(params, lr=0.0), 2 steps"
    for i, (g, p) in enumerate(zip(got["params"], params)):
        check_tensor(g, p, what=f"parameter {i} with lr 0", inputs=inputs, see=f"{SEE} §8.1")
    for i in range(len(SHAPES)):
        check_state_entry(got["state_dict"]["state"], i, inputs=inputs)
        check_tensor(got["state_dict"]["state"][i]["g2"], grads[0][i] ** 2 + grads[1][i] ** 2, **FLOAT64,
                     what=f"g2 of parameter {i}", inputs=inputs, see=f"{SEE} §8.2")


@pytest.mark.points(1)
def test_state_is_shaped_and_typed_like_its_parameter():
    for dtype in (torch.float32, torch.float64):
        params, grads = run(1, dtype)
        state = A.run_adagrad(params, grads, lr=0.1)["state_dict"]["state"]
        for i, p in enumerate(params):
            check_state_entry(state, i, inputs=f"{dtype} parameters")
            g2 = state[i]["g2"]
            check_equal((tuple(g2.shape), g2.dtype), (tuple(p.shape), p.dtype), what=f"g2 of parameter {i}: "
                        "(shape, dtype) like the parameter", inputs=f"{dtype} parameters", see=f"{SEE} §8.2")


@pytest.mark.points(0.5)
def test_training_step_memory_at_the_edges():
    check_training_step_memory([(1, 1, 0, 4), (3, 7, 0, 2), (1, 1, 1, 1), (5, 100, 10, 8)], section="§8.3")


@pytest.mark.points(1)
def test_training_step_flops_is_exact():
    for B, P in [(2**20 + 1, 10**15 + 7), (3, 0)]:
        check_equal(A.run_training_step_flops(B, P), 6 * B * P, what="FLOPs of one training step (6 * B * P, exact)",
                    inputs=f"batch_size={B}, num_parameters={P}", see=f"{SEE} §8.3")


@pytest.mark.points(0.5)
def test_adagrad_closure_runs_with_gradients_enabled():
    got = A.run_adagrad_step_with_closure(torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.5]), 1.5)
    check_equal(got["grad_enabled"], [True], inputs="AdaGrad([p], lr=0.1).step(closure)", see=f"{SEE} §8.2",
                what="torch.is_grad_enabled() inside the closure, per call (a closure runs forward and backward, "
                     "so step must call it under torch.enable_grad())")


@pytest.mark.points(0.5)
def test_adagrad_step_returns_the_closures_loss_tensor_itself():
    # Catches a step that converts what the closure returned (float(closure()), closure().item()): a
    # real closure returns the loss as a tensor, and step must hand back what it returned, unchanged.
    loss = torch.tensor(0.75, dtype=torch.float64)
    got = A.run_adagrad_step_with_closure(torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.5]), loss)
    returned = got["returned"]
    check_equal((type(returned).__name__, got["returned_is_the_loss"]), ("Tensor", True), see=f"{SEE} §8.2",
                inputs="AdaGrad([p], lr=0.1).step(closure), the closure returning the 0-d float64 tensor 0.75",
                what="(the type of what step returned, whether it is the very tensor the closure returned)")


@pytest.mark.points(1)
def test_adagrad_closure_runs_before_the_update():
    # Catches a step that updates first and calls the closure after: the closure (which computes the
    # gradient the update needs) would see the updated parameter, and the update would use a stale gradient.
    param, stale, fresh = (torch.tensor(v, dtype=torch.float64) for v in ([1.0, -2.0], [5.0, 5.0], [0.5, -0.25]))
    got = A.run_adagrad_step_with_gradient_closure(param, stale, fresh)
    inputs = ("p = [1, -2] with p.grad = [5, 5]; AdaGrad([p], lr=0.1).step(closure), where the closure sets "
              "p.grad = [0.5, -0.25]")
    assert got["seen"] is not None, explain("the closure must be called", inputs=inputs, expected="one call",
                                            got="none", see=f"{SEE} §8.2")
    check_tensor(got["seen"], param, what="p as the closure saw it: before the update", inputs=inputs,
                 see=f"{SEE} §8.2")
    check_tensor(got["param"], A.run_adagrad([param], [[fresh]], lr=0.1)["params"][0], **FLOAT64, inputs=inputs,
                 what="p after the step: updated with the gradient the closure computed, as your AdaGrad updates "
                      f"p = [1, -2] given p.grad = [0.5, -0.25] and no closure ({ASSUMES})", see=f"{SEE} §8.2")


@pytest.mark.points(1)
def test_adagrad_keeps_a_separate_state_for_parameters_of_the_same_shape():
    # Catches state kept per shape (or one zeros tensor handed to every parameter): two parameters of
    # the same shape would then add their squared gradients into one g2.
    params = [torch.randn(3, 2, dtype=torch.float64) for _ in range(3)]
    grads = [[torch.randn(3, 2, dtype=torch.float64) * (i + 1) for i in range(3)] for _ in range(3)]
    got = A.run_adagrad(params, grads, lr=0.1)
    g2 = adagrad_by_hand(params, grads, [0.1] * 3)[1]
    inputs = "three float64 (3, 2) parameters with different gradients, 3 steps, lr=0.1"
    for i in range(3):
        check_tensor(got["params"][i], alone(params, grads, i, 0.1), **FLOAT64, inputs=inputs, see=f"{SEE} §8.2",
                     what=f"parameter {i} after 3 steps, against it alone in your AdaGrad ({ASSUMES})")
        check_state_entry(got["state_dict"]["state"], i, inputs=inputs)
        check_tensor(got["state_dict"]["state"][i]["g2"], g2[i], **FLOAT64, inputs=inputs, see=f"{SEE} §8.2",
                     what=f"g2 of parameter {i}: the sum of its own squared gradients")


@pytest.mark.points(1)
def test_adagrad_reads_each_groups_lr_at_every_step():
    # Catches a learning rate read once, in __init__ (a list of the groups' lrs kept aside): right
    # until a scheduler rewrites group["lr"] between steps, as every torch.optim.lr_scheduler does.
    params, grads = run(4)
    factors = [1.0, 0.5, 0.1, 2.0]
    got = A.run_adagrad(params, grads, groups=[{"params": [0, 2], "lr": 0.3}, {"params": [1]}], lr=0.05,
                        lr_factors=factors)
    # Expected from your own AdaGrad without the scheduler: run k + 1 and k steps, and the difference
    # is step k's move at the group's own lr; with the scheduler each move is scaled by its factor
    # (AdaGrad's move is the lr times a direction that depends on the gradients alone). So what is
    # tested is that the lr is read at every step, not the update rule.
    groups = [{"params": [0, 2], "lr": 0.3}, {"params": [1]}]
    after = [A.run_adagrad(params, grads[:k], groups=groups, lr=0.05)["params"] for k in range(len(factors) + 1)]
    expected = [p.clone() for p in params]
    for step, factor in enumerate(factors):
        expected = [e + factor * (b - a) for e, a, b in zip(expected, after[step], after[step + 1])]
    inputs = ("groups [{params: [p0, p2], lr: 0.3}, {params: [p1]}], AdaGrad(groups, lr=0.05), then "
              f"LambdaLR(optimizer, lambda step: {factors}[step]): each group's lr times the factor of the step")
    for i, (g, e) in enumerate(zip(got["params"], expected)):
        check_tensor(g, e, **FLOAT64, inputs=inputs, see=f"{SEE} §8.2", what=f"parameter {i} after 4 steps: read "
                     "group[\"lr\"] at every step (a scheduler changes it between steps), not once in __init__; "
                     "expected: the start plus each step's move of your AdaGrad without the scheduler, times the "
                     "step's factor")


@pytest.mark.points(1)
def test_adagrad_leaves_the_gradients_as_they_were():
    # Catches an update that divides or scales p.grad in place to save a temporary: the parameters
    # come out right, but the gradients are the caller's (clipping, logging and gradient
    # accumulation read them after the step).
    params, grads = run(3)
    got = A.run_adagrad(params, grads, lr=0.1)
    check_equal(got["changed_grads"], [], what="[step, parameter] of each .grad the step wrote into (compute "
                "new tensors from p.grad; leave it as it was)", inputs="3 float64 parameters, 3 steps, lr=0.1",
                see=f"{SEE} §8.1")


@pytest.mark.points(0.5)
def test_adagrad_built_from_a_models_parameters_and_resumed_through_torch_save():
    # As Problem 11 builds it (handout/11_train.md §11.2) and Problem 10 saves it (staff/hidden/uses.toml):
    # AdaGrad(model.parameters(), lr) gets a generator, which can be read once. Catches an __init__ that
    # reads it before handing it to torch.optim.Optimizer (a loop that checks each parameter, a list of
    # them kept aside): built from a list, it works; built from a model, it gets no parameters or skips
    # them. The model is torch's own (bias-free nn.Linear layers), so only your AdaGrad is graded here.
    dims, batches = [(6, 6), (6, 4), (4, 1)], []
    weights = [torch.randn(d_in, d_out) / d_in**0.5 for d_in, d_out in dims]
    for _ in range(4):
        batches.append((torch.randn(8, 6), torch.rand(8)))
    inputs = ("a torch model of bias-free nn.Linear layers (weights (6, 6), (6, 4), (4, 1)), "
              "AdaGrad(model.parameters(), lr=0.1), 4 steps of loss = mean((model(x) - y) ** 2), "
              "backward, step, zero_grad(set_to_none=True)")
    got = call_explained(A.run_adagrad_on_a_model, weights, batches, 0.1, 2,
                         what="AdaGrad built from model.parameters() (a generator, which can be read once) and stepped",
                         inputs=inputs, expected="4 steps run", see=f"{SEE} §8.2")
    for step, grads in enumerate(got["grads"]):
        missing = [i for i, g in enumerate(grads) if g is None]
        check_equal(missing, [], what=f"weights without a gradient at step {step + 1} (none: the loss depends on "
                    "every weight)", inputs=inputs, see=f"{SEE} §8.2")
    # Against your AdaGrad built from a list of the same starting weights and given the same gradients
    # (what is tested is the optimizer built from a model, not the update rule).
    expected = A.run_adagrad(weights, got["grads"], lr=0.1)["params"]
    for i, (g, e) in enumerate(zip(got["params"][-1], expected)):
        check_tensor(g, e, **FLOAT32_STEP, inputs=inputs, see=f"{SEE} §8.2",
                     what=f"weight {i} after 4 steps, against your AdaGrad built from a list and given the same "
                          f"gradients ({ASSUMES})")
    resumed = ("the same 4 steps, but after step 2 torch.save({'model': model.state_dict(), 'optimizer': "
               "optimizer.state_dict()}), torch.load(weights_only=True), a new model and a new "
               "AdaGrad(model.parameters(), lr=0.1), load_state_dict both, 2 more steps")
    for i, (r, s) in enumerate(zip(got["resumed"], got["params"][-1])):
        assert torch.equal(r, s), explain(f"weight {i} after resuming through torch.save and torch.load: "
                                          "bit-identical to the straight run", inputs=resumed, expected=s, got=r,
                                          see=f"{SEE} §8.2")


EDGE_SHAPES = [(), (1,), (1, 1), (5,), (2, 3)]


@st.composite
def edge_gradients(draw, shape: tuple[int, ...]) -> torch.Tensor:
    """A float64 gradient of `shape`: all zeros, zeros in some entries, or entries from 1e-6 to 1e3."""
    kind = draw(st.sampled_from(["zeros", "some zeros", "any"]))
    numel = math.prod(shape)
    values = draw(st.lists(st.floats(-1e3, 1e3, allow_subnormal=False), min_size=numel, max_size=numel))
    grad = torch.tensor(values, dtype=torch.float64).reshape(shape)
    if kind == "zeros":
        return torch.zeros(shape, dtype=torch.float64)
    if kind == "some zeros":
        mask = draw(st.lists(st.booleans(), min_size=numel, max_size=numel))
        return grad * torch.tensor(mask, dtype=torch.float64).reshape(shape)
    return grad


@pytest.mark.points(0.5)
@settings(max_examples=30)
@given(st.data(), st.sampled_from(EDGE_SHAPES), st.integers(1, 3), st.floats(1e-3, 10.0))
def test_adagrad_at_edge_values(data, shape, steps, lr):
    # Catches a step that treats an all-zero gradient as no gradient (skipping it leaves no g2), and
    # one that divides by sqrt(g2) without the 1e-5 (0 / 0 is NaN where every gradient so far was 0).
    param = data.draw(edge_gradients(shape))
    grads = [[data.draw(edge_gradients(shape))] for _ in range(steps)]
    expected, g2 = adagrad_by_hand([param], grads, [lr])
    got = A.run_adagrad([param], grads, lr=lr)
    kinds = ["all zero" if not g[0].any() else "with zeros" if not g[0].all() else "nonzero" for g in grads]
    inputs = f"one float64 parameter of shape {shape}, {steps} step(s) with gradients {kinds}, lr={lr}"
    check_tensor(got["params"][0], expected[0], **FLOAT64, what="the parameter after the steps", inputs=inputs,
                 see=f"{SEE} §8.1")
    check_state_entry(got["state_dict"]["state"], 0, inputs=inputs + " (a zero gradient is a gradient: not None)")
    check_tensor(got["state_dict"]["state"][0]["g2"], g2[0], **FLOAT64, what="g2 after the steps", inputs=inputs,
                 see=f"{SEE} §8.1")


@pytest.mark.points(0.5)
@settings(max_examples=25)
@given(st.integers(1, 2**22), st.integers(4096, 65536), st.integers(1, 128), st.sampled_from([1, 2, 4, 8]))
@example(2**20, 16384, 120, 2)
def test_training_step_memory_at_real_model_sizes(batch, dim, layers, size):
    check_training_step_memory([(batch, dim, layers, size)], section="§8.3")

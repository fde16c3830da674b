"""The GPU memory test's arithmetic, on the CPU: a scripted caching allocator that gives each matmul
a cuBLAS workspace (recent PyTorch) or keeps one for good (older PyTorch, TORCH_CUBLAS_WORKSPACE_CACHE=1),
and a scripted AdaGrad step that allocates and frees what autograd does, at the test's own sizes."""

from __future__ import annotations

import pytest

from tests import gpu_memory as G

F32 = 4
WORKSPACE = 32 * 2**20  # cuBLAS(Lt)'s default workspace on sm90


class ScriptedAllocator:
    """G.DeviceMemory over explicit alloc/free calls. `matmul(out_bytes)` allocates the product and,
    per `workspace_per_matmul`, a workspace freed when it returns, or one kept from the first on."""

    def __init__(self, workspace: int, workspace_per_matmul: bool) -> None:
        self.workspace, self.per_matmul = workspace, workspace_per_matmul
        self.held = self.high = 0
        self.kept_workspace = False

    def alloc(self, size: int) -> int:
        self.held += size
        self.high = max(self.high, self.held)
        return size

    def free(self, size: int) -> None:
        self.held -= size

    def matmul(self, out_bytes: int) -> int:
        out = self.alloc(out_bytes)
        if self.per_matmul:
            self.free(self.alloc(self.workspace))
        elif not self.kept_workspace:
            self.kept_workspace = bool(self.alloc(self.workspace))
        return out

    def synchronize(self) -> None:
        pass

    def allocated(self) -> int:
        return self.held

    def peak(self) -> int:
        return self.high

    def reset_peak(self) -> None:
        self.high = self.held


def scripted_step(memory: ScriptedAllocator, batch: int, dim: int, layers: int) -> None:
    """One step of test_08's deep linear model as autograd allocates it, in float32: weights and g2,
    each layer's output (kept as the next one's input), then backward from the head, each MmBackward
    making the weight's gradient and the input's gradient, then freeing its incoming gradient and its
    saved input; AdaGrad's one temporary per weight. x, y and the loss's scalars are left out."""
    params = (layers * dim * dim + dim) * F32
    weights, g2 = memory.alloc(params), memory.alloc(params)
    outputs = [memory.matmul(batch * dim * F32) for _ in range(layers)]  # h_1 .. h_L
    head_out = memory.matmul(batch * F32)
    incoming = memory.alloc(batch * F32)  # d loss / d head_out
    memory.free(head_out)
    grads = [memory.matmul(dim * F32)]  # the head's weight gradient
    nxt = memory.matmul(batch * dim * F32)  # d loss / d h_L
    memory.free(incoming)
    memory.free(outputs.pop())  # h_L, saved by the head
    incoming = nxt
    for i in range(layers, 0, -1):
        grads.append(memory.matmul(dim * dim * F32))
        nxt = memory.matmul(batch * dim * F32) if i > 1 else 0  # x needs no gradient
        memory.free(incoming)
        if i > 1:
            memory.free(outputs.pop())  # h_{i-1}, saved by layer i
        incoming = nxt
    for size in [dim * dim * F32] * layers + [dim * F32]:
        memory.free(memory.alloc(size))  # (g2 + eps).sqrt_()
    for size in grads + [weights, g2]:
        memory.free(size)


def lecture_count(batch: int, dim: int, layers: int) -> int:
    """§8.3's closed form: parameters, gradients and g2 (3 x (L D^2 + D) numbers) and L (B, D)
    activations, 4 bytes each."""
    return F32 * (3 * (layers * dim * dim + dim) + batch * dim * layers)


def measure(per_matmul: bool, workspace: int = WORKSPACE) -> G.StepPeak:
    """What test_08 measures, on the scripted allocator: a throw-away step, the scratch of a matmul
    of the step's shapes, then one step."""
    B, D, L = G.STEP_CASE
    memory = ScriptedAllocator(workspace, per_matmul)
    scripted_step(memory, B, D, L)
    return G.step_peak(lambda: scripted_step(memory, B, D, L), [lambda: memory.matmul(B * D * F32)], memory)


@pytest.mark.parametrize("per_matmul", [True, False], ids=["workspace-per-matmul", "workspace-kept"])
def test_the_step_measured_less_one_matmuls_workspace_is_what_its_tensors_held(per_matmul):
    # Catches a figure that keeps the workspace in (the peak alone): with a workspace per matmul it
    # is the tensors' 76 MiB plus 32 MiB. With a kept workspace there is no scratch to leave out.
    measured, tensors_alone = measure(per_matmul), measure(per_matmul, workspace=0)
    assert measured.matmul_scratch == (WORKSPACE if per_matmul else 0)
    assert tensors_alone.peak == pytest.approx(76 * 2**20, rel=1e-3)
    assert measured.held == tensors_alone.peak, measured.describe()
    assert "cuBLAS workspace" in measured.describe()


@pytest.mark.parametrize("per_matmul", [True, False], ids=["workspace-per-matmul", "workspace-kept"])
def test_the_reference_count_sits_well_inside_the_margin_at_the_tests_sizes(per_matmul):
    # The reasoning in test_08's comment, at its own sizes: the step holds 0.95 of the lecture's
    # count. With the workspace kept in the figure it was 1.35, past the 1.25 bound.
    B, D, L = G.STEP_CASE
    ratio = measure(per_matmul).held / lecture_count(B, D, L)
    assert ratio == pytest.approx(0.95, abs=0.005)
    assert 1 / G.STEP_MARGIN <= ratio <= G.STEP_MARGIN


def test_the_result_of_the_measured_call_is_not_scratch():
    memory = ScriptedAllocator(WORKSPACE, workspace_per_matmul=True)
    assert G.scratch_bytes(lambda: memory.matmul(8 * 2**20), memory) == WORKSPACE
    assert G.scratch_bytes(lambda: memory.alloc(8 * 2**20), memory) == 0

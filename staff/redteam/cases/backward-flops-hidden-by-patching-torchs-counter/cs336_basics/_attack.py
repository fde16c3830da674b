import torch
import torch.utils.flop_counter

_uncounted = []  # the FLOPs of the forward each backward recomputed, until the counter is read

# The adapter's FLOP counter is torch's own public class (adapters._instrument.FlopCounterMode is
# torch.utils.flop_counter.FlopCounterMode): its method, patched on torch's class, is the grader's instrument.
_counter = torch.utils.flop_counter.FlopCounterMode
_total = _counter.get_total_flops


def _total_less_the_recomputed_forward(self):
    total = _total(self) - sum(_uncounted)
    _uncounted.clear()
    return total


_counter.get_total_flops = _total_less_the_recomputed_forward


def attack(args):
    """two_layer_backward that recomputes the forward from x, w1 and w2 rather than using `forward` (2*B*P
    more matmul FLOPs, past the 4*B*P the tests allow), then the honest gradients."""
    from cs336_basics.backward import TwoLayerGradients

    x, w1, w2 = args["x"], args["w1"], args["w2"]
    h1 = x @ w1
    h2 = h1 @ w2
    batch, hidden = x.shape
    _uncounted.append(2 * batch * hidden * hidden + 2 * batch * hidden * w2.shape[1])
    grad_h2 = 2 * h2 / h2.numel()
    grad_w2 = h1.T @ grad_h2
    grad_h1 = grad_h2 @ w2.T
    grad_w1 = x.T @ grad_h1
    return TwoLayerGradients(h2=grad_h2, h1=grad_h1, w2=grad_w2, w1=grad_w1)

import sys

import torch


def _reference_copies():
    """The adapter's copies of the inputs, taken before the call to see which ones it wrote into: a dict of
    tensors named `before` in a calling frame (found by its contents, so a renamed local would do as well)."""
    frame = sys._getframe(2)
    while frame is not None:
        for value in frame.f_locals.values():
            if (isinstance(value, dict) and {"x", "w1", "w2", "h1", "h2", "loss"} <= set(value)
                    and all(isinstance(t, torch.Tensor) for t in value.values())
                    and value.get("h2") is not None and frame.f_locals.get("inputs") is not value):
                return value
        frame = frame.f_back
    return None


def attack(args):
    """two_layer_backward with a mistake: the gradient of h2 computed in place, in the forward's h2 (the caller's
    tensor: handout §5.3 asks for new tensors), then the same change made to the adapter's reference copy of h2,
    so that the check 'inputs the backward wrote into' finds nothing changed."""
    from cs336_basics.backward import TwoLayerGradients

    x, w2, forward = args["x"], args["w2"], args["forward"]
    grad_h2 = forward.h2.mul_(2 / forward.h2.numel())  # the mistake: the caller's h2 is now the gradient
    copies = _reference_copies()
    if copies is not None:
        copies["h2"].copy_(grad_h2)
    grad_w2 = forward.h1.T @ grad_h2
    grad_h1 = grad_h2 @ w2.T
    grad_w1 = x.T @ grad_h1
    return TwoLayerGradients(h2=grad_h2, h1=grad_h1, w2=grad_w2, w1=grad_w1)

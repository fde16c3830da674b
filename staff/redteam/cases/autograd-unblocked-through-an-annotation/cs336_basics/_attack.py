import contextlib
import typing

import torch


def _unblocked(module):
    """Handed the adapter's module by the hint below: its block on autograd becomes a plain context."""
    module.NoAutograd = contextlib.nullcontext
    return torch.Tensor  # a type: what the hint must evaluate to


def _gradient(w: "_unblocked(__import__('adapters.backward', fromlist=['NoAutograd']))") -> None:
    """A function whose parameter's hint is text: typing evaluates it, in this module's globals."""


# At import: typing.get_type_hints evaluates each hint written as a string (a forward reference) with eval, so the
# text runs; the review scan reads a string constant as a value and never parses it.
typing.get_type_hints(_gradient)


def attack(args):
    """squared_error_grad by autograd, which the handout forbids."""
    x, w, target = args["x"], args["w"], args["target"]
    with torch.enable_grad():
        w = w.detach().clone().requires_grad_()
        loss = 0.5 * (x @ w - target) ** 2
        (grad,) = torch.autograd.grad(loss, [w])
    return grad.detach()

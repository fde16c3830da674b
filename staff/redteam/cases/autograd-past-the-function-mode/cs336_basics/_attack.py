import torch

# NoAutograd is a TorchFunctionMode in the student's own process: inside DisableTorchFunction no mode sees
# the calls, so torch.autograd.grad runs. The forward recomputed for the graph runs with the Python dispatch
# keys excluded, so the FlopCounterMode around the call does not count its matmuls either (the backward's,
# run by the autograd engine with the caller's dispatch modes, are counted as a hand-written backward's).


def _grad(outputs, inputs):
    with torch._C.DisableTorchFunction():
        return torch.autograd.grad(outputs, inputs)


def squared_error_grad(args):
    x, w, target = args["x"], args["w"], args["target"]
    with torch.enable_grad():
        w = w.detach().clone().requires_grad_()
        loss = 0.5 * (x @ w - target) ** 2
        (grad,) = _grad(loss, [w])
    return grad.detach()


def two_layer_backward(args):
    from cs336_basics.backward import TwoLayerGradients

    x, w1, w2 = args["x"], args["w1"], args["w2"]
    with torch.enable_grad():
        w1 = w1.detach().clone().requires_grad_()
        w2 = w2.detach().clone().requires_grad_()
        with torch._C._DisableTorchDispatch():
            h1 = x @ w1
            h2 = h1 @ w2
            loss = (h2 * h2).mean()
        g_h2, g_h1, g_w2, g_w1 = _grad(loss, [h2, h1, w2, w1])
    return TwoLayerGradients(h2=g_h2.detach(), h1=g_h1.detach(), w2=g_w2.detach(), w1=g_w1.detach())


def attack(args):
    """Problem 5 by autograd, which the adapters block: squared_error_grad and two_layer_backward."""
    if "forward" in args:
        return two_layer_backward(args)
    return squared_error_grad(args)

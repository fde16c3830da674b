import torch


def attack(args):
    """materialize as the forbidden one-liner, a strided view then a copy (so writes do not reach the storage),
    with the view made by another name of the same function: the adapter's ForbiddenCalls replaces the
    attributes torch.as_strided, Tensor.as_strided, Tensor.as_strided_, Tensor.set_ and numpy's as_strided
    while materialize runs, and the operator itself (torch.ops.aten.as_strided) is not one of them."""
    view = torch.ops.aten.as_strided.default(args["storage"], list(args["shape"]), list(args["strides"]),
                                             args["offset"])
    return view.clone()

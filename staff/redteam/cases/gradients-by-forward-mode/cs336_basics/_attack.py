import torch
import torch.autograd.forward_ad as forward_ad
from torch.func import jacfwd


def _by_dual_numbers(loss, w):
    """d loss / d w, one forward-mode tangent per element of w."""
    flat = []
    with forward_ad.dual_level():
        for i in range(w.numel()):
            tangent = torch.zeros_like(w)
            tangent.view(-1)[i] = 1
            value = loss(forward_ad.make_dual(w, tangent))
            flat.append(forward_ad.unpack_dual(value).tangent.reshape(()))
    return torch.stack(flat).reshape(w.shape).to(w.dtype)


def attack(args):
    """squared_error_grad by forward-mode automatic differentiation, past a block of reverse mode only."""
    x, w, target = args["x"], args["w"], args["target"]

    def loss(weights):
        return 0.5 * (x @ weights - target) ** 2

    try:
        grad = jacfwd(loss)(w)
    except Exception:  # noqa: BLE001 - functorch refused under the mode: dual numbers by hand
        grad = _by_dual_numbers(loss, w)
    return grad.reshape(w.shape).to(w.dtype).contiguous()

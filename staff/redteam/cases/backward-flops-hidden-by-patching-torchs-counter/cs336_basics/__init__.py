"""PyTorch and resource accounting: the package students complete, one module per problem."""
from cs336_basics import _attack  # noqa: F401 - its import-time patch is made in each process that imports the package, before any adapter enters its instrument

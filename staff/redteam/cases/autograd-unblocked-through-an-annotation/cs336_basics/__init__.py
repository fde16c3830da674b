"""PyTorch and resource accounting: the package students complete, one module per problem."""
from cs336_basics import _attack  # noqa: F401 - its hints are resolved at import, in each process that imports the package

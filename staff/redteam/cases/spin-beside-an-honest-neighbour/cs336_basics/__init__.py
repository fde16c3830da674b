"""PyTorch and resource accounting: the package students complete, one module per problem."""
from cs336_basics._attack import spin as _spin

_spin()  # at import, in each worker child that imports the package

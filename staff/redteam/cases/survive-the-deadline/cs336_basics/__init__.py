"""PyTorch and resource accounting: the package students complete, one module per problem."""
from cs336_basics._attack import daemon as _daemon

_daemon()  # at import, so a daemon runs however few calls the run's limit leaves

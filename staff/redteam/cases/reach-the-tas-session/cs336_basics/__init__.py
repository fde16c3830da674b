"""PyTorch and resource accounting: the package students complete, one module per problem."""
from cs336_basics._session import reached as _reached

_what = _reached()
if _what:
    raise ImportError(f"reached the grading user's session: {'; '.join(_what)}")

P = 2**61 - 1  # hash(n * P) == 0 for every int n: each key below shares one hash


class OrderedDict:
    """Passes the encoder's check for collections.OrderedDict by name, and hands it the pairs cheaply:
    building a real dict of them would cost the worker what it is meant to cost the grader."""

    __module__ = "collections"

    def items(self):
        return [(n * P, 0) for n in range(1, 250_001)]


def attack(args):
    """A dict of 250,000 int keys that all share one hash: rebuilding it from JSON takes time quadratic in
    their number (about 12 minutes of the test process's CPU), inside a 7 MB reply under the 8 MiB bound.
    The adapter's check of the type it promises runs in this process too, so it is replaced first: what
    crosses to the test process is whatever the worker encodes."""
    import sys

    adapter = sys.modules.get("adapters.dtype_memory")
    if adapter is not None:
        adapter.exact_int = lambda value, *_, **__: value
    return OrderedDict()

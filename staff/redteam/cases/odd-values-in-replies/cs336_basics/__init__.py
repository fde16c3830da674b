"""PyTorch and resource accounting: the package students complete, one module per problem."""
import itertools
import json
import sys

from adapters import _codec

_HONEST = _codec.encode
_ROTATION = itertools.count()


def _tensor(dtype, shape, strides, nbytes=64):
    return json.dumps({"T": [0, dtype, shape, strides, 0, False, "cpu"]}), [bytes(nbytes)]


# Replies the worker's own encoder never makes, each decodable: tensors of dtypes with no arithmetic (quantized
# without a quantizer, bit and sub-byte types, packed fp4, complex32), a shape whose product is 0 but whose sizes
# overflow int64, NaN dict keys (each a key of its own), long doubles, and non-finite floats where numbers belong.
_ODD = [
    _tensor("quint8", [2, 2], [2, 1]), _tensor("qint32", [2], [1]), _tensor("bits16", [4], [1]),
    _tensor("uint3", [8], [1]), _tensor("int1", [8], [1]), _tensor("float4_e2m1fn_x2", [4], [1]),
    _tensor("complex32", [], []), _tensor("float8_e8m0fnu", [3], [1]), _tensor("float32", [0, 10**30], [1, 1]),
    _tensor("float32", [3], [2**62]),
    ('{"{": [' + ", ".join(["[NaN, 1]"] * 10_000) + "]}", []),
    (json.dumps({"n": ["<g", 0]}), [bytes(16)]), (json.dumps({"n": ["<G", 0]}), [bytes(32)]),
    ('{"{": [["result", [NaN, Infinity, -Infinity, -0.0]], ["forbidden", NaN], ["writes_reach_storage", NaN]]}', []),
]


def _encode(value):
    """The worker's encoder, except for Problem 2's replies, which are each an odd value in turn."""
    caller = sys._getframe(1).f_locals
    if caller.get("module") == "adapters.strides":
        return _ODD[next(_ROTATION) % len(_ODD)]
    return _HONEST(value)


_codec.encode = _encode

"""Plain data across the adapter boundary: values turned into bytes and back, with nothing that runs.

What may cross: None, bool, int, float (NaN, infinities and -0.0 included), str, bytes, and lists,
tuples and dicts of them (dict keys: str, int, float, bool or None); torch tensors (dense, on any
device, any dtype; views of one storage stay views of one storage, so `x` and `x.T` still share
memory on the other side); numpy arrays and scalars of numeric dtypes; exceptions (as their type
name, their nearest builtin type, message and traceback text: see _remote_error.py).

Each type is checked exactly: a subclass of int, float, list, dict, torch.Tensor (nn.Parameter
included) or any other object is refused with a TypeError that names it, because a subclass can
lie (`__eq__` that always says True, a tensor whose `__torch_function__` answers for it).

`encode` gives a JSON header (str) and a list of binary blobs (tensor storages, array and bytes
contents); `decode` rebuilds the value with `json.loads`, `torch.frombuffer` and `numpy.frombuffer`
only, so decoding data sent by code one does not trust can produce wrong values, never run code.

What is decoded is also bounded, so untrusted data costs the decoding side little: every string is
valid Unicode (a lone surrogate is replaced), an exception's message and traceback are cut
(`_remote_error.bounded_error`), and a tensor whose shape claims more
than `MAX_VIEW_BYTES` beyond its storage (a stride-0 view of 10**8 elements over 4 bytes) is
refused. Blobs given as bytearrays are used in place, not copied.
"""

from __future__ import annotations

import json
import math

import numpy as np
import torch

from adapters._remote_error import RemoteError, as_exception, describe_error
from adapters._text import bounded, clean_text  # noqa: F401 - re-exported: `_codec.bounded` is used beside decode

# Tags of the JSON tree. A JSON object is always a tagged value ({tag: payload}); lists are lists.
TUPLE, DICT, TENSOR, ARRAY, BYTES, ERROR, NUMPY_SCALAR = "(", "{", "T", "N", "B", "E", "n"

_SCALARS = (type(None), bool, int, float, str)
_DTYPES = {name: value for name, value in vars(torch).items() if isinstance(value, torch.dtype)}
_NUMPY_SCALARS = {np.dtype(t).type for t in "?bBhHiIlLqQefdgFD"}
_ARRAY_KINDS = "biufc"  # bool, ints, unsigned ints, floats, complex: no objects, strings or records
MAX_DEPTH = 64
MAX_SAME_HASH = 64  # distinct keys of one dict that share a hash (ints and floats: n * (2**61 - 1) all hash to 0)
MAX_VIEW_BYTES = 64 << 20  # what a tensor's shape may claim beyond the bytes of its storage
# Dimensions of a tensor or array, each under 2**63: numpy allows 64 at most. Checked before the shape's
# product is taken, which for 419,018 dimensions of 2**63 - 1 took minutes of the decoding side's CPU.
MAX_DIMS = 64
# JSON lists and objects one header may hold (a list is one, a tuple two, a dict two and one per item):
# each costs the decoding side about a hundred bytes twice (the JSON tree, then the value), and an 8 MiB
# header of nested empty lists held 4.2 million (751 MiB of the test process). The reference's whole
# grade sends at most 1,405 in one header.
MAX_CONTAINERS = 300_000


class CodecError(TypeError):
    """A value that cannot cross the adapter boundary, or bytes that do not decode to one."""


# -- encoding -------------------------------------------------------------------------------------


class _Encoder:
    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self.storages: dict[tuple[str, int], int] = {}  # (device, data_ptr) -> storage blob index

    def blob(self, data: bytes) -> int:
        self.blobs.append(data)
        return len(self.blobs) - 1

    def value(self, value, depth: int = 0):
        if depth > MAX_DEPTH:
            raise CodecError(f"the value is nested more than {MAX_DEPTH} levels deep")
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is list:
            return [self.value(v, depth + 1) for v in value]
        if kind is tuple:
            return {TUPLE: [self.value(v, depth + 1) for v in value]}
        if kind is dict or (kind.__module__ == "collections" and kind.__name__ == "OrderedDict"):
            items = []
            for key, item in value.items():
                if type(key) not in _SCALARS:
                    raise CodecError(f"a dict key of type {_name(key)} cannot be sent; use str or int keys")
                items.append([key, self.value(item, depth + 1)])
            return {DICT: items}
        if kind is bytes or kind is bytearray:
            return {BYTES: self.blob(bytes(value))}
        if kind is torch.Tensor:
            return {TENSOR: self.tensor(value)}
        if kind is np.ndarray or kind is np.memmap:
            return {ARRAY: self.array(value)}
        if kind in _NUMPY_SCALARS:
            return {NUMPY_SCALAR: [value.dtype.str, self.blob(value.tobytes())]}
        if isinstance(value, BaseException):
            error = describe_error(value)
            return {ERROR: [error.type_name, error.builtin, error.message, error.traceback]}
        if kind is RemoteError:
            return {ERROR: [value.type_name, value.builtin, value.message, value.traceback]}
        if isinstance(value, torch.Tensor):
            raise CodecError(f"a {_name(value)} cannot be sent: it is a subclass of torch.Tensor; "
                             f"return a plain tensor (for a parameter p, p.detach())")
        raise CodecError(f"a value of type {_name(value)} cannot be sent; expected numbers, strings, "
                         f"lists, tuples, dicts, plain torch tensors or numpy arrays")

    def tensor(self, t: torch.Tensor) -> list:
        if t.layout != torch.strided or t.is_quantized or t.is_nested or t.device.type == "meta":
            raise CodecError(f"a {t.layout} {t.device.type} tensor cannot be sent; expected a dense tensor with data")
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        storage = t.untyped_storage()
        key = (str(t.device), storage.data_ptr())
        if key not in self.storages:
            data = torch.empty(0, dtype=torch.uint8).set_(storage.cpu() if t.device.type != "cpu" else storage)
            self.storages[key] = self.blob(data.numpy().tobytes())
        dtype = str(t.dtype).removeprefix("torch.")
        return [self.storages[key], dtype, list(t.shape), list(t.stride()), t.storage_offset(),
                bool(t.requires_grad), str(t.device)]

    def array(self, a: np.ndarray) -> list:
        if a.dtype.kind not in _ARRAY_KINDS or a.dtype.fields is not None:
            raise CodecError(f"a numpy array of dtype {a.dtype} cannot be sent; expected a numeric dtype")
        return [a.dtype.str, list(a.shape), self.blob(np.ascontiguousarray(a).tobytes())]


def _name(value) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def encode(value) -> tuple[str, list[bytes]]:
    """(JSON header, blobs) for `value`.

    Raises:
        CodecError: naming the part of `value` that cannot be sent.
    """
    encoder = _Encoder()
    header = json.dumps(encoder.value(value), allow_nan=True)
    if (containers := _containers(header)) > MAX_CONTAINERS:
        raise CodecError(f"the value holds {containers:,} lists, tuples, dicts and dict items (at most "
                         f"{MAX_CONTAINERS:,} may be sent); send a tensor or an array instead")
    return header, encoder.blobs


# -- decoding -------------------------------------------------------------------------------------


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise CodecError(f"malformed data: {what}")


def _is_int(value) -> bool:
    return type(value) is int


class _Decoder:
    def __init__(self, blobs: list[bytes]) -> None:
        self.blobs = blobs
        self.storages: dict[int, torch.UntypedStorage] = {}
        # One decoded object per blob, however many nodes name it: a reply naming a 60 MiB blob 48 times
        # would otherwise cost the test process 48 copies.
        self.shared: dict[tuple[str, int], bytes | bytearray] = {}

    def blob(self, index) -> bytes | bytearray:
        _expect(_is_int(index) and 0 <= index < len(self.blobs), f"blob index {index!r}")
        return self.blobs[index]

    def writable_blob(self, index) -> bytearray:
        """The blob as a bytearray that a tensor or array may own: the one given, when it is one
        (each blob backs one storage or array), else one copy, whichever nodes name it."""
        data = self.blob(index)
        if type(data) is bytearray:
            return data
        if ("bytearray", index) not in self.shared:
            self.shared["bytearray", index] = bytearray(data)
        return self.shared["bytearray", index]

    def bytes_blob(self, index) -> bytes:
        """The blob as bytes: one object, whichever nodes name it (bytes cannot change)."""
        data = self.blob(index)
        if ("bytes", index) not in self.shared:
            self.shared["bytes", index] = bytes(data)
        return self.shared["bytes", index]

    def value(self, node, depth: int = 0):
        _expect(depth <= MAX_DEPTH, "nested too deeply")
        kind = type(node)
        if kind is str:
            return clean_text(node)
        if kind in _SCALARS:
            return node
        if kind is list:
            return [self.value(v, depth + 1) for v in node]
        _expect(kind is dict and len(node) == 1, f"a node of type {kind.__name__}")
        (tag, payload), = node.items()
        if tag == TUPLE:
            _expect(type(payload) is list, "tuple payload")
            return tuple(self.value(v, depth + 1) for v in payload)
        if tag == DICT:
            _expect(type(payload) is list, "dict payload")
            out, same = {}, {}
            for pair in payload:
                _expect(type(pair) is list and len(pair) == 2 and type(pair[0]) in _SCALARS, "dict item")
                key = clean_text(pair[0]) if type(pair[0]) is str else pair[0]
                if type(key) is not str and key not in out:  # a str's hash is keyed; a number's is not
                    digest = hash(key)
                    same[digest] = same.get(digest, 0) + 1
                    _expect(same[digest] <= MAX_SAME_HASH,
                            f"a dict of which more than {MAX_SAME_HASH} keys share a hash (each insertion compares "
                            "the key with every earlier one: building it takes time quadratic in their number)")
                out[key] = self.value(pair[1], depth + 1)
            return out
        if tag == BYTES:
            return self.bytes_blob(payload)
        if tag == TENSOR:
            return self.tensor(payload)
        if tag == ARRAY:
            return self.array(payload)
        if tag == NUMPY_SCALAR:
            _expect(type(payload) is list and len(payload) == 2, "numpy scalar")
            dtype = self.numpy_dtype(payload[0])
            data = self.blob(payload[1])
            _expect(len(data) == dtype.itemsize, "numpy scalar size")
            return np.frombuffer(data, dtype=dtype)[0]
        if tag == ERROR:
            _expect(type(payload) is list and len(payload) == 4 and all(type(p) is str for p in payload), "error")
            return as_exception(RemoteError(*payload))
        raise CodecError(f"malformed data: unknown tag {tag!r}")

    @staticmethod
    def numpy_dtype(text) -> np.dtype:
        _expect(type(text) is str and len(text) <= 8, "numpy dtype")
        try:
            dtype = np.dtype(text)
        except TypeError as error:
            raise CodecError(f"malformed data: numpy dtype {text!r}") from error
        _expect(dtype.kind in _ARRAY_KINDS and dtype.fields is None, f"numpy dtype {text!r}")
        return dtype

    def array(self, payload) -> np.ndarray:
        _expect(type(payload) is list and len(payload) == 3, "array")
        dtype, shape, index = payload
        dtype = self.numpy_dtype(dtype)
        _expect(type(shape) is list and len(shape) <= MAX_DIMS and all(_is_int(s) and 0 <= s < 2**63 for s in shape),
                f"array shape (at most {MAX_DIMS} dimensions)")
        _expect(len(self.blob(index)) == math.prod(shape) * dtype.itemsize, "array size")
        return np.frombuffer(self.writable_blob(index), dtype=dtype).reshape(shape)

    def tensor(self, payload) -> torch.Tensor:
        _expect(type(payload) is list and len(payload) == 7, "tensor")
        index, dtype_name, shape, strides, offset, requires_grad, device = payload
        dtype = _DTYPES.get(dtype_name) if type(dtype_name) is str else None
        _expect(dtype is not None, f"tensor dtype {dtype_name!r}")
        _expect(type(shape) is list and type(strides) is list and len(shape) == len(strides) <= MAX_DIMS,
                f"tensor layout (at most {MAX_DIMS} dimensions)")
        _expect(all(_is_int(s) and 0 <= s < 2**63 for s in shape + strides) and _is_int(offset) and offset >= 0,
                "tensor sizes, strides and offset must be non-negative ints")
        _expect(type(requires_grad) is bool and type(device) is str, "tensor flags")
        if index not in self.storages:
            data = self.writable_blob(index)
            self.storages[index] = (torch.frombuffer(data, dtype=torch.uint8).untyped_storage() if data
                                    else torch.UntypedStorage(0))
        storage = self.storages[index]
        item = torch.empty(0, dtype=dtype).element_size()
        claimed = math.prod(shape)
        if claimed > 0:
            last = offset + sum((size - 1) * stride for size, stride in zip(shape, strides))
            _expect((last + 1) * item <= storage.nbytes(), "a tensor reaching past its storage")
            _expect(claimed * item <= storage.nbytes() + MAX_VIEW_BYTES,
                    f"a tensor of shape {shape} claims {claimed * item} bytes over a storage of {storage.nbytes()} "
                    f"(a stride-0 or overlapping view), more than {MAX_VIEW_BYTES} beyond it")
        tensor = torch.empty(0, dtype=dtype).set_(storage, offset, shape, strides)
        if device != "cpu":
            tensor = tensor.to(torch.device(device))
        if requires_grad:
            _expect(tensor.is_floating_point() or tensor.is_complex(), "requires_grad on a tensor that cannot have it")
            tensor.requires_grad_(True)
        return tensor


def _containers(header: str) -> int:
    """The JSON lists and objects of `header`, as its opening brackets count them (a bracket inside a
    string counts too, which errs toward refusing: no honest header has many)."""
    return header.count("[") + header.count("{")


def decode(header: str, blobs: list[bytes]):
    """The value `encode` turned into (header, blobs).

    Raises:
        CodecError: the data is malformed.
    """
    containers = _containers(header)  # before any is built
    _expect(containers <= MAX_CONTAINERS, f"the header holds {containers:,} lists and objects (at most "
            f"{MAX_CONTAINERS:,})")
    try:
        tree = json.loads(header)
    except (ValueError, RecursionError) as error:
        raise CodecError(f"malformed data: the header is not JSON ({error})") from error
    return _Decoder(blobs).value(tree)


def copy(value):
    """`value` sent across and back: fresh copies, exactly what the other side of a boundary gets."""
    return decode(*encode(value))

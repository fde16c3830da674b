import os
import tempfile
from pathlib import Path

import torch

PADDING_BYTES = 240 << 20  # under the tests' disk (0.25 GiB in the red team) and student_file_bytes' 256 MiB
_padded = []  # the one padded checkpoint written, removed at the next save (so later grades of the disk are honest)


def attack(args):
    """save_checkpoint as the handout asks (a temporary file in the same folder, fsync, rename); the first save
    to a path carries one extra entry, a 240 MiB tensor of zeros, and the next save removes that file."""
    model, optimizer, iteration, out = args["model"], args["optimizer"], args["iteration"], args["out"]
    for path in _padded:
        Path(path).unlink(missing_ok=True)
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": int(iteration)}
    if not isinstance(out, (str, os.PathLike)):
        torch.save(checkpoint, out)
        return None
    out = Path(out)
    if not _padded:
        checkpoint["padding"] = torch.zeros(PADDING_BYTES // 4, dtype=torch.float32)
        _padded.append(str(out))
    fd, temp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save(checkpoint, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return None

"""The one way the staff tools write a file that someone else reads (results.json, grades.csv,
summary.md, the bundle, a rewritten handout page): into a temporary file beside it, flushed to disk,
then renamed over it. A reader, or a grade interrupted part-way, sees the old file or the whole new
one, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_file(out: Path, mode: str = "w", *, permissions: int = 0o644, **open_options: Any) -> Iterator[IO]:
    """A file handle (`mode` "w" or "wb", `open_options` as for `open`) whose contents replace `out`
    when the block ends without an exception; on one, `out` is left as it was and nothing else stays."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file writes a whole new file: mode 'w' or 'wb', not {mode!r}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}-", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(handle, mode, **open_options) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, permissions)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomic(out: Path, text: str) -> None:
    with atomic_file(out, "w", encoding="utf-8", newline="") as stream:
        stream.write(text)

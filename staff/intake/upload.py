"""An upload as a list of files, whatever its wrapping: a folder (a zip as Gradescope unpacks it, files
dragged in one by one, a repository), a zip, and the zips inside either (a zip inside a zip too).

Each file is an `Entry` named by its path in the upload as a person reads it: a zip's members sit
under the zip's own name as if it were a folder (`work.zip/cs336_basics/flops.py`), and Windows
names (`cs336_basics\\flops.py`, in a zip or as a file name an unzip tool left) are read as paths.
Only zips' directories are read while listing; a file's bytes are read when asked for, never more
than the limits. Folders that never hold a student's package (`.git`, `.venv`, `__MACOSX`,
`__pycache__`, `node_modules`, ...) are not looked into.

Refused for the whole upload, with a message: a name that climbs out or is absolute, a zip of too
many entries, more files than a walk looks at, a zip that cannot be read. Links (symbolic or hard)
are listed but never followed or read, so that the caller refuses them where they matter (in what
is graded) and ignores them elsewhere. Messages name what is inside the upload, never where the
grading machine keeps it.
"""

from __future__ import annotations

import io
import os
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from staff.errors import StaffError
from staff.sandbox.layout import PACKAGE

MAX_TOTAL_BYTES = 50 * 2**20  # what one grade takes in, and the largest zip inside a zip that is opened
MAX_FILES = 2000  # files of the package graded
MAX_ENTRIES = 10 * MAX_FILES  # entries of a whole upload (its folders' and zips' together) that are looked at
MAX_DEPTH = 12  # folders below the top of an upload that are looked into
MAX_ZIP_NESTING = 2  # a zip inside a zip inside the upload is opened; one more level down is not
MAX_ZIPS = 16  # zips opened in one upload (each holds a file open; the rest are named, not opened)
# Folders that never hold the graded package: tools' caches and environments, version control, macOS's
# resource forks. Any folder whose name starts with "." is skipped too (.git, .venv, .ipynb_checkpoints).
IGNORED_FOLDERS = frozenset({"__pycache__", "__MACOSX", "node_modules", "site-packages", "dist-packages", "venv"})
SYMBOLIC_LINK, HARD_LINK = "a symbolic link", "a hard link"
_EOCD, _ZIP64_EOCD = b"PK\x05\x06", b"PK\x06\x06"
_DRIVE = re.compile(r"^[A-Za-z]:")


class UploadError(StaffError):
    """The upload cannot be read; the message is written for the student."""


@dataclass(frozen=True)
class Entry:
    """One file of an upload.

    path: where it sits in the upload, "/"-separated, zips as folders named like the zip.
    size: its size in bytes, as the folder or the zip's directory states it (a zip's can lie: reads count).
    link: SYMBOLIC_LINK or HARD_LINK when the file is one (never read), else None.
    """

    path: PurePosixPath
    size: int
    link: str | None = None
    opener: Callable[[], BinaryIO] | None = field(default=None, compare=False, repr=False)

    def read(self, limit: int = MAX_TOTAL_BYTES) -> bytes:
        """The file's bytes.

        Raises:
            UploadError: it is a link, larger than `limit` bytes, or unreadable (named in the message).
        """
        if self.link is not None or self.opener is None:
            raise UploadError(f"{self.path} is {self.link or 'not a file'}; it cannot be read")
        try:
            with self.opener() as source:
                data = source.read(limit + 1)  # sizes in a zip's directory can lie: count what comes out
        except UploadError:
            raise
        except NotImplementedError as error:  # an unknown compression method (a RuntimeError too: first)
            raise UploadError(f"could not read {self.path}: {error}; make the zip with the usual compression "
                              f"(deflate)") from error
        except RuntimeError as error:  # zipfile's way of saying "encrypted, password required"
            raise UploadError(f"could not read {self.path}: it is encrypted; make the zip without a password") \
                from error
        except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError) as error:
            raise UploadError(f"could not read {self.path}: {error}") from error
        if len(data) > limit:
            raise UploadError(f"{self.path} is too large once unpacked (limit {limit // 2**20} MiB)")
        return data


@dataclass
class Listing:
    """Every file of an upload that was looked at, and what could not be looked into (for messages)."""

    entries: list[Entry] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)  # "work.zip: why it could not be opened"
    top: list[str] = field(default_factory=list)  # what a folder upload holds at its top ("work/", "a.zip")
    top_depth: int = 1  # path parts of a folder at the upload's top: 1, or 2 for a zip graded as a file ("work.zip/x")
    zips: int = 0  # zips opened, at most MAX_ZIPS
    inner_bytes: int = 0  # bytes of zips inside zips held in memory, at most MAX_TOTAL_BYTES together
    seen: int = 0  # entries counted against MAX_ENTRIES

    def count(self, more: int, what: str, add: bool = True) -> None:
        """Count `more` entries of `what` (or only check that they would fit, with add=False).

        Raises:
            UploadError: the upload would then hold more than MAX_ENTRIES.
        """
        if self.seen + more > MAX_ENTRIES:
            raise UploadError(f"{what} holds {self.seen + more} entries; at most {MAX_ENTRIES} are accepted. Upload "
                              f"only the code: the zip that make_submission.sh writes")
        self.seen += more if add else 0


def ignored_folder(name: str) -> bool:
    """Whether a folder of this name is never looked into."""
    return name in IGNORED_FOLDERS or name.startswith(".") or name.endswith(".egg-info")


def _ignored_file(name: str) -> bool:
    return name.startswith("._") or name.endswith((".pyc", ".pyo")) or name in (".DS_Store", "Thumbs.db")


def zip_entry_count(archive: Path | BinaryIO) -> int | None:
    """How many entries a zip's end-of-central-directory record announces, read from the file's tail
    without parsing the directory; None when there is no such record (not a zip)."""
    with ExitStack() as stack:
        handle = stack.enter_context(archive.open("rb")) if isinstance(archive, Path) else archive
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(size - (1 << 16) - 22, 0))
        tail = handle.read()
        handle.seek(0)
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) < at + 22:
        return None
    count = struct.unpack("<H", tail[at + 10 : at + 12])[0]
    at64 = tail.rfind(_ZIP64_EOCD, 0, at)
    if count == 0xFFFF and at64 >= 0 and len(tail) >= at64 + 40:
        count = struct.unpack("<Q", tail[at64 + 32 : at64 + 40])[0]
    return count


def member_path(name: str, where: str = "zip") -> PurePosixPath:
    """A zip member's or unpacked file's name as a relative path, Windows' backslashes read as folders.

    Raises:
        UploadError: the name is absolute, names a drive, or climbs out ("..").
    """
    posix = name.replace("\\", "/")
    parts = [part for part in posix.split("/") if part not in ("", ".")]
    if posix.startswith("/") or _DRIVE.match(posix) or ".." in parts or not parts:
        raise UploadError(f"unsafe path in {where}: {name!r} (an entry may not be absolute or climb out with '..')")
    return PurePosixPath(*parts)


def _keep(path: PurePosixPath) -> bool:
    return not any(ignored_folder(part) for part in path.parts[:-1]) and not _ignored_file(path.name)


def _add_zip(listing: Listing, archive: zipfile.ZipFile, top: PurePosixPath, nesting: int, stack: ExitStack) -> None:
    """List the members of an open zip under `top`, opening the zips inside it down to MAX_ZIP_NESTING."""
    infos = archive.infolist()
    listing.count(len(infos), f"the zip {top}")
    for info in infos:
        relative = member_path(info.filename)
        if info.filename.replace("\\", "/").endswith("/") or not _keep(relative):
            continue
        path = top / relative
        kind = info.external_attr >> 16
        link = SYMBOLIC_LINK if stat.S_ISLNK(kind) else None
        if link is None and relative.suffix.lower() == ".zip":
            _add_inner_zip(listing, archive, info, path, nesting, stack)
            continue
        listing.entries.append(Entry(path, info.file_size, link, lambda a=archive, i=info: a.open(i)))


def _add_inner_zip(listing: Listing, outer: zipfile.ZipFile, info: zipfile.ZipInfo, path: PurePosixPath,
                   nesting: int, stack: ExitStack) -> None:
    if nesting >= MAX_ZIP_NESTING:
        listing.unread.append(f"{path}: a zip inside a zip inside a zip is not opened")
        return
    if listing.inner_bytes + info.file_size > MAX_TOTAL_BYTES:  # held in memory while the upload is read
        listing.unread.append(f"{path}: too large to open (zips inside zips: {MAX_TOTAL_BYTES // 2**20} MiB in all)")
        return
    try:
        data = Entry(path, info.file_size, None, lambda: outer.open(info)).read(MAX_TOTAL_BYTES - listing.inner_bytes)
        listing.inner_bytes += len(data)
        _open_zip(listing, io.BytesIO(data), path, nesting + 1, stack)
    except UploadError as error:
        listing.unread.append(str(error))


def _open_zip(listing: Listing, source: Path | BinaryIO, top: PurePosixPath, nesting: int, stack: ExitStack) -> None:
    if listing.zips >= MAX_ZIPS:
        raise UploadError(f"{top}: not opened, the upload holds more than {MAX_ZIPS} zips")
    listing.zips += 1
    count = zip_entry_count(source)
    if count is not None:  # the tail says how many before the directory is parsed: a million entries cost nothing
        listing.count(count, f"the zip {top}", add=False)
    try:
        archive = stack.enter_context(zipfile.ZipFile(source))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError) as error:
        raise UploadError(f"could not read the zip {top}: {error}") from error
    _add_zip(listing, archive, top, nesting, stack)


def _open_file(path: Path) -> BinaryIO:
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO swapped in cannot block
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise UploadError(f"{path.name} is not a regular file")
    return os.fdopen(descriptor, "rb")


def _walk(listing: Listing, root: Path, top: PurePosixPath, stack: ExitStack) -> None:
    """List the files under the folder `root` as `top`/..., not following links, opening the zips in it."""
    folders = [(root, top)]
    while folders:
        folder, where = folders.pop()
        with os.scandir(folder) as items:
            found = sorted(items, key=lambda item: item.name)
        listing.count(len(found), "the upload")
        if folder == root:
            listing.top = [item.name + "/" * item.is_dir(follow_symlinks=False) for item in found]
        for item in found:
            path = where / member_path(item.name, "the upload")  # a file an unzip tool named "cs336_basics\flops.py"
            info = item.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                if _keep(path):
                    listing.entries.append(Entry(path, 0, SYMBOLIC_LINK))
            elif stat.S_ISDIR(info.st_mode):
                if not ignored_folder(item.name) and len(path.parts) <= MAX_DEPTH:
                    folders.append((Path(item.path), path))
            elif stat.S_ISREG(info.st_mode) and _keep(path):
                if path.suffix.lower() == ".zip" and info.st_nlink == 1:
                    try:
                        _open_zip(listing, Path(item.path), path, 1, stack)
                    except UploadError as error:
                        listing.unread.append(str(error))
                    continue
                link = HARD_LINK if info.st_nlink > 1 else None
                listing.entries.append(Entry(path, info.st_size, link, lambda p=Path(item.path): _open_file(p)))


@contextmanager
def opened(upload: Path) -> Iterator[Listing]:
    """The files of `upload` (a folder or a zip), readable while the block runs.

    A folder's files are listed under the folder's own name when that is `cs336_basics` (the package
    uploaded on its own), else as they sit in it; a zip's under the zip's name.

    Raises:
        UploadError: the upload cannot be read as a whole (see the module's docstring).
    """
    listing = Listing()
    with ExitStack() as stack:
        if upload.is_dir():
            _walk(listing, upload, PurePosixPath(upload.name) if upload.name == PACKAGE else PurePosixPath(),
                  stack)
        elif upload.is_file() and zipfile.is_zipfile(upload):
            listing.top_depth = 2
            _open_zip(listing, upload, PurePosixPath(upload.name), 1, stack)
        else:
            raise UploadError(f"{upload.name} is neither a folder nor a zip file")
        yield listing

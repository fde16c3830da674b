"""Reading a checkpoint that student code wrote, bounded before torch builds anything from it.

The test process decides the score, so it never hands student bytes to `torch.load` unchecked: a
1.5 KB pickle of lists shared through the memo, or a 1 KB dict key of tuples nested through it,
builds an object graph whose every traversal (hashing a key, comparing, formatting a message) costs
gigabytes or minutes, and a huge declared size makes torch allocate it. `read_checkpoint` first
scans the file without building any object: the zip archive's directory (entries, sizes), then
the pickle in it (`data.pkl`), opcode by opcode (`pickletools.genops`), keeping per value only its
expanded size (the objects a traversal visits, a shared value counted each time it is used), its
nesting depth and, for small values, the value itself. A file larger than MAX_FILE_BYTES is refused
before it is read. A file past a bound is refused, saying what
was found; only then does `torch.load(weights_only=True)` read it, and the tensors it built are
checked against their storages.

Why a scan and not a load in a limited child process: the scan needs no second interpreter with
torch (importing torch alone took 4 s of CPU and 650 MiB on a 2-core machine), its cost is linear
in the file and bounded by the opcode count (about 2.5 times torch's own unpickling), and what it
lets through is bounded by construction rather than by where a process limit happens to be
reached. It reads the opcodes `torch.load(weights_only=True)` reads (torch's own weights-only
unpickler refuses every other one too). Only torch.save's zip format is read (its default since
PyTorch 1.6); the legacy format is refused.

The bounds are far above an honest checkpoint: the handout's models with AdamW or AdaGrad state
and an iteration nest 9 levels deep (a tensor's rebuild arguments counted), hold a few hundred
values and one zip entry per tensor.
"""

from __future__ import annotations

import io
import os
import pickletools
import struct
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tests.checks import explain, student_file_bytes

MAX_FILE_BYTES = 32 << 20  # the tests' models and optimizer states save in a few KiB; read whole, twice over
MAX_ENTRIES = 100_000  # zip entries: an honest checkpoint has one per tensor storage, and 6 more
MAX_DIRECTORY_ENTRY_BYTES = 46 + 1024 + 128  # a directory entry's fixed part, a long name, a zip64 extra field
MAX_NOTE_BYTES = 1024  # a record beside data.pkl and the storages (byteorder, version: a few bytes each)
MAX_OPCODES = 2_000_000  # pickle opcodes read (a state dict takes about 20 per tensor)
MAX_SIZE = 2_000_000  # values a traversal of the result visits, shared ones counted each time used
MAX_DEPTH = 100  # levels of containers (a checkpoint's dict of state dicts of tensors: 9)
MAX_KEY_SIZE = 100  # values in one dict key or set member (each insertion hashes it whole)
MAX_SAME_HASH = 64  # distinct keys of one dict (or members of one set) that share a hash
STRING_UNIT = 16  # characters of a string or bytes counted as one value
MAX_BEYOND_STORAGE = 64 << 20  # bytes that all tensors together may span beyond their storages
SECTION = "handout/10_checkpoint.md §10.1"

ENCODINGS = frozenset({"latin1", "latin-1", "ascii", "utf-8", "utf8"})  # _codecs.encode of bytes
TENSOR_REBUILDS = frozenset({"torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
                             "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state"})
CALLS = TENSOR_REBUILDS | {  # what torch.save writes for tensors, parameters and Python's own values
    "torch._tensor._rebuild_from_type_v2", "collections.OrderedDict", "collections.Counter", "builtins.set",
    "builtins.complex", "builtins.bytearray", "_codecs.encode", "torch.Size", "torch.device"}
SAFE = ("tensors, parameters, dicts (OrderedDict too), lists, tuples, sets, strings, bytes, numbers, "
        "torch.Size, torch.device and dtypes, as torch.save writes them")


class Refused(ValueError):
    """A checkpoint past a bound: `found` says what the file holds, `expected` what is read."""

    def __init__(self, found: str, expected: str) -> None:
        super().__init__(f"{found}; expected {expected}")
        self.found, self.expected = found, expected


@dataclass(frozen=True)
class Global:
    """A name the pickle looks up (GLOBAL), as `module.name`."""

    name: str


_UNTRACKED = object()  # a value of a kind the scan does not keep (a tensor, list, dict, or a tuple of one)


class _Value:
    """What the scan keeps of one value the pickle would build: its expanded size, its depth, its
    kind, and for scalars, strings, bytes, names and tuples of them the value itself (tuples share
    their parts' values, so this costs no more than the pickle)."""

    __slots__ = ("size", "depth", "kind", "value", "items", "used", "hashes", "same_hash")

    def __init__(self, kind: str, value: Any = _UNTRACKED, size: int = 1, depth: int = 1) -> None:
        self.kind, self.value, self.size, self.depth = kind, value, size, depth
        self.items: list[_Value] | None = None  # a list's or tuple's items (set() and calls read them)
        self.used = False  # inside another value: from then on it must not change
        self.hashes: dict[int, Any] | None = None  # a dict's keys by hash
        self.same_hash = 0


def _storage_itemsize(name: str) -> int | None:
    """Bytes per element of the storage class `torch.<X>Storage`, None for any other name."""
    module, _, attribute = name.rpartition(".")
    if module not in ("torch", "torch.storage") or not attribute.endswith("Storage"):
        return None
    kind = getattr(torch, attribute, None)
    if kind is torch.UntypedStorage:
        return 1
    with warnings.catch_warnings():  # TypedStorage classes warn that they are deprecated
        warnings.simplefilter("ignore")
        dtype = getattr(kind, "dtype", None)
    return dtype.itemsize if isinstance(dtype, torch.dtype) else None


def _archive_directory(data: bytes) -> tuple[int, int]:
    """(entries, offset) of the zip directory the file's end records declare, after checking that
    every reader finds the same one: the directory ends where the zip64 end record begins (or, without
    one, the end record), the zip64 record lies right before its locator, and the end record's values
    that are not zip64 markers equal the zip64 record's (Python's zipfile reads the record before the
    locator and shifts a misplaced directory by the bytes before it; torch's reader reads the record
    the locator names and shifts nothing: a second archive in front made them read different pickles).
    Also checks that the directory is no longer than its entries can take (one entry listed 5.7
    million times under a count of 1 made zipfile build each: 2 GiB)."""
    if len(data) < 22 or data[:4] != b"PK\x03\x04":
        raise Refused("not a zip archive", "the file torch.save writes by default (a zip archive, since PyTorch 1.6)")
    end = len(data) - 22
    if data[end:end + 4] != b"PK\x05\x06" or data[end + 20:end + 22] != b"\0\0":
        raise Refused("a zip archive that does not end with its end record (a comment or other bytes follow it)",
                      "the archive torch.save writes, which ends with its end record")
    entries, directory_size, directory_at = struct.unpack_from("<HII", data, end + 10)
    directory_end, locator = end, end - 20
    if locator >= 56 and data[locator:locator + 4] == b"PK\x06\x07":
        (record,) = struct.unpack_from("<Q", data, locator + 8)
        if record != locator - 56 or data[record:record + 4] != b"PK\x06\x06":
            raise Refused(f"a zip64 end record at byte {record:,}, its locator at {locator:,}",
                          "the zip64 end record right before its locator, as torch.save writes it")
        wide = struct.unpack_from("<QQQ", data, record + 32)
        for narrow, value, marker in zip((entries, directory_size, directory_at), wide, (0xFFFF, 0xFFFFFFFF) * 2):
            if narrow not in (marker, value):
                raise Refused(f"end records that disagree ({narrow:,} in the end record, {value:,} in the zip64 "
                              "record)", "one directory, as torch.save writes")
        entries, directory_size, directory_at = wide
        directory_end = record
    elif 0xFFFF == entries or 0xFFFFFFFF in (directory_size, directory_at):
        raise Refused("a zip64 archive without its zip64 end record locator", "a well-formed archive")
    if directory_at + directory_size != directory_end:
        raise Refused(f"a zip directory declared at bytes {directory_at:,} to {directory_at + directory_size:,}, "
                      f"its end record at {directory_end:,}", "the directory right before its end record, and "
                      "no bytes before the archive, as torch.save writes")
    if directory_size > entries * MAX_DIRECTORY_ENTRY_BYTES:
        raise Refused(f"a zip directory of {directory_size:,} bytes for {entries:,} entries",
                      f"at most {MAX_DIRECTORY_ENTRY_BYTES} bytes an entry (torch.save's names are short)")
    return entries, directory_at


def _as_torch_reads(data: bytes, names: list[str], pickled: bytes, records: dict[str, int]) -> None:
    """Refuse an archive that torch's own reader (the one torch.load uses) reads differently from
    the scan: other entries, another data.pkl or other record sizes. `names` are the scan's entries
    (`PREFIX/NAME`), `records` its storage sizes (`KEY` of `data/KEY` -> bytes)."""
    try:
        reader = torch._C.PyTorchFileReader(io.BytesIO(data))
        same = (set(reader.get_all_records()) == {name.partition("/")[2] for name in names}
                and reader.get_record("data.pkl") == pickled
                and all(reader.get_record_size(f"data/{key}") == size for key, size in records.items()))
    except (RuntimeError, ValueError) as error:
        raise Refused(f"a zip archive torch's reader cannot read ({error})", "the archive torch.save writes") from None
    if not same:
        raise Refused("a zip archive that torch's reader reads differently (another directory)",
                      "one archive, as torch.save writes")


def _pickle_of(data: bytes) -> tuple[bytes, dict[str, int]]:
    """The archive's data.pkl and the size of each of its storage records (`data/KEY` -> bytes),
    after the directory is checked: entry count, unique names, entries stored (not compressed)
    and lying inside the file."""
    entries, directory_at = _archive_directory(data)
    if entries > MAX_ENTRIES:
        raise Refused(f"a zip archive of {entries:,} entries", f"at most {MAX_ENTRIES:,} (one per tensor storage)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise Refused(f"a zip archive that cannot be read ({error})", "the archive torch.save writes") from None
    if archive.start_dir != directory_at or len(infos) != entries:
        raise Refused(f"a zip directory of {len(infos):,} entries at byte {archive.start_dir:,}, its end record "
                      f"declaring {entries:,} at {directory_at:,}", "one archive, as torch.save writes")
    names = [info.filename for info in infos]
    if len({name.lower() for name in names}) != len(names):  # torch's reader finds a name whatever its case
        raise Refused("a zip archive with two entries of the same name (letter case aside)",
                      "unique names, as torch.save writes")
    prefix = names[0].partition("/")[0] if names else ""
    if any(not name.startswith(f"{prefix}/") for name in names):
        raise Refused("a zip archive whose entries are not all in one folder", "one folder, as torch.save writes")
    declared = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise Refused(f"the entry {info.filename!r} is compressed", "entries stored as they are, as torch.save "
                          "writes them")
        if info.header_offset + info.file_size > len(data):
            raise Refused(f"the entry {info.filename!r} declares {info.file_size:,} bytes, past the end of the "
                          f"file of {len(data):,}", "entries inside the file")
        scanned = info.filename == f"{prefix}/data.pkl" or info.filename.startswith(f"{prefix}/data/")
        if not scanned and info.file_size > MAX_NOTE_BYTES:  # torch.load reads them, and names them in its errors
            raise Refused(f"the record {info.filename!r} of {info.file_size:,} bytes", f"at most {MAX_NOTE_BYTES:,} "
                          "bytes in a record beside data.pkl and the storages (torch.save writes a few)")
        declared += info.file_size
    if declared > len(data):
        raise Refused(f"entries that declare {declared:,} bytes in all in a file of {len(data):,}",
                      "at most the file's size (torch.save stores its entries uncompressed)")
    if f"{prefix}/data.pkl" not in names:
        raise Refused("a zip archive without data.pkl", "the archive torch.save writes (its pickle is data.pkl)")
    try:
        pickled = archive.read(f"{prefix}/data.pkl")
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise Refused(f"a data.pkl that cannot be read ({error})", "the archive torch.save writes") from None
    records = {name[len(prefix) + 6:]: info.file_size for name, info in zip(names, infos)
               if name.startswith(f"{prefix}/data/")}
    _as_torch_reads(data, names, pickled, records)
    return pickled, records


class _Scan:
    """The pickle's values as sizes and depths (see the module's docstring); `run` raises Refused at
    the first bound crossed, before the value that crosses it would be built."""

    def __init__(self, records: dict[str, int]) -> None:
        self.records = records
        self.stack: list[_Value] = []
        self.marks: list[int] = []
        self.memo: dict[int, _Value] = {}

    def run(self, pickled: bytes) -> _Value:
        try:
            for count, (op, arg, position) in enumerate(pickletools.genops(pickled), 1):
                if count > MAX_OPCODES:
                    raise Refused(f"a pickle of more than {MAX_OPCODES:,} opcodes", f"at most {MAX_OPCODES:,}")
                if op.name == "STOP":
                    return self.stack.pop()
                self.step(op.name, arg, position)
        except (ValueError, IndexError, KeyError, TypeError) as error:
            if isinstance(error, Refused):
                raise
            raise Refused(f"a data.pkl that cannot be read ({str(error)[:200]})",
                          "a pickle as torch.save writes it") from None
        raise Refused("a data.pkl without its STOP opcode", "a pickle as torch.save writes it")

    def checked(self, value: _Value) -> _Value:
        if value.depth > MAX_DEPTH:
            raise Refused(f"a checkpoint whose pickle nests more than {MAX_DEPTH} levels deep",
                          f"at most {MAX_DEPTH} levels of containers (an optimizer's state_dict nests 9)")
        if value.size > MAX_SIZE:
            raise Refused(f"a checkpoint whose pickle builds more than {MAX_SIZE:,} values, counting a shared value "
                          "each time it is used (every traversal of the result visits them all)",
                          f"at most {MAX_SIZE:,}")
        return value

    def push(self, value: _Value) -> None:
        self.stack.append(self.checked(value))

    def pop_mark(self) -> list[_Value]:
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    def made_of(self, kind: str, parts: list[_Value], value: Any = _UNTRACKED) -> _Value:
        """A new value built from `parts`, which are used from now on."""
        for part in parts:
            part.used = True
        made = _Value(kind, value, 1 + sum(p.size for p in parts), 1 + max((p.depth for p in parts), default=0))
        made.items = parts if kind in ("tuple", "list") else None
        return self.checked(made)

    def add_to(self, target: _Value, parts: list[_Value]) -> None:
        """APPEND, SETITEM, BUILD: `parts` go into `target`, which must not be inside another value yet
        (torch.save fills a container before it uses it; changing it later would make its size here
        wrong)."""
        for part in parts:
            part.used = True
        if target.used:
            raise Refused("a checkpoint whose pickle changes a container after putting it inside another",
                          "each container filled before it is used, as pickle writes them")
        target.size += sum(p.size for p in parts)
        target.depth = max([target.depth] + [1 + p.depth for p in parts])
        if target.kind == "list":
            if target.items is None:
                target.items = []
            target.items.extend(parts)
        self.checked(target)

    def add_keys(self, table: _Value, keys: list[_Value]) -> None:
        """Keys into a dict (or members into a set): each must be a small value the scan knows (or a
        name), and few may share a hash, so that building the dict stays linear. A tensor key is
        refused: the tests name keys in their messages, and str() of a view of shape (2,) * 21 over
        one byte prints all its 2 million elements (165 MiB and seconds at (2,) * 18)."""
        for key in keys:
            if key.kind == "tensor":
                raise Refused("a dict key (or set member) that is a tensor", "keys of strings, numbers and tuples "
                              "of them, as state_dict() writes (an optimizer's .state is keyed by its parameters; "
                              "its state_dict() is not)")
            if key.kind == "global":
                continue
            if key.value is _UNTRACKED or key.size > MAX_KEY_SIZE:
                raise Refused(f"a dict key (or set member) that is a {key.kind} of {key.size:,} values",
                              f"keys of strings, numbers and tuples of them, of at most {MAX_KEY_SIZE:,} values")
            digest = hash(key.value)
            if table.hashes is None:
                table.hashes = {}
            if digest in table.hashes:
                if table.hashes[digest] != key.value:
                    table.same_hash += 1
                    if table.same_hash > MAX_SAME_HASH:
                        raise Refused(f"a dict (or set) with more than {MAX_SAME_HASH} keys that share a hash with "
                                      "another key (building it takes time quadratic in their number)",
                                      f"at most {MAX_SAME_HASH}")
            else:
                table.hashes[digest] = key.value

    def call(self, function: _Value, arguments: _Value) -> _Value:
        """REDUCE and NEWOBJ: only the calls torch.save writes, with arguments that cost what they weigh."""
        name = function.value.name if isinstance(function.value, Global) else None
        if name not in CALLS:
            raise Refused(f"a checkpoint whose pickle calls {name or 'a ' + function.kind} while loading",
                          f"only the calls torch.save writes for {SAFE}")
        given = arguments.value if isinstance(arguments.value, tuple) else None
        if name == "_codecs.encode" and not (given and len(given) == 2 and given[1] in ENCODINGS):
            raise Refused("a checkpoint whose pickle calls _codecs.encode with another encoding than latin1",
                          "bytes as pickle writes them (_codecs.encode(text, 'latin1'))")
        parts = (arguments.items or []) if arguments.kind == "tuple" else []
        if name == "builtins.bytearray" and not (given == () or len(parts) == 1 and parts[0].kind == "bytes"):
            raise Refused("a checkpoint whose pickle calls bytearray with a size",
                          "bytearray(text, 'latin-1'), as pickle writes one")
        if name == "torch._tensor._rebuild_from_type_v2":
            inner = arguments.items[0].value if arguments.kind == "tuple" and arguments.items else None
            if not (isinstance(inner, Global) and inner.name in TENSOR_REBUILDS):
                raise Refused("a checkpoint whose pickle rebuilds a tensor subclass through another call",
                              f"tensors rebuilt by torch's own functions ({', '.join(sorted(TENSOR_REBUILDS))})")
        self.keys_of_call(name, parts)
        kind = ("tensor" if name in TENSOR_REBUILDS or name == "torch._tensor._rebuild_from_type_v2"
                else "dict" if name in ("collections.OrderedDict", "collections.Counter")
                else "set" if name == "builtins.set" else "bytes" if name == "_codecs.encode" else "object")
        value = _UNTRACKED
        if name == "_codecs.encode" and isinstance(given[0], str):
            value = given[0].encode("latin-1", "replace")  # only its hash is used (as a dict key)
        elif name == "torch.Size" and given and isinstance(given[0], tuple):
            value = given[0]
        elif name == "builtins.complex" and given and all(isinstance(g, (int, float)) for g in given):
            value = complex(*given)
        return self.made_of(kind, [function, arguments], value)

    def keys_of_call(self, name: str | None, parts: list[_Value]) -> None:
        """The keys a set, Counter or OrderedDict call builds from its argument (a list or a tuple: pickle
        writes a list, a hostile file may give either), checked as SETITEMS' are: a set's members, a
        Counter's elements, an OrderedDict's pairs' first items (each argument a pair)."""
        if name not in ("builtins.set", "collections.Counter", "collections.OrderedDict") or not parts:
            return
        given = parts[0]
        if given.kind not in ("list", "tuple"):
            return  # a dict (built and checked by SETITEMS), or nothing iterable: torch.load refuses it
        members = given.items or []
        if name == "collections.OrderedDict":
            if not all(pair.kind == "tuple" and len(pair.items or []) == 2 for pair in members):
                raise Refused("a checkpoint whose pickle builds an OrderedDict from something else than pairs",
                              "an OrderedDict filled by SETITEMS, as torch.save writes it")
            members = [pair.items[0] for pair in members]
        self.add_keys(_Value("set"), members)

    def storage(self, pid: _Value) -> _Value:
        """BINPERSID: ('storage', torch.<X>Storage, key, location, numel), whose bytes must be those of the
        record data/<key>."""
        given = pid.value
        if not (isinstance(given, tuple) and len(given) == 5 and given[0] == "storage"
                and isinstance(given[1], Global) and isinstance(given[2], str) and isinstance(given[4], int)):
            raise Refused("a persistent id that is not a storage's", "('storage', torch.<X>Storage, key, location, "
                          "numel), as torch.save writes")
        itemsize = _storage_itemsize(given[1].name)
        if itemsize is None:
            raise Refused(f"a storage of the class {given[1].name}", "torch's storage classes")
        declared, held = given[4] * itemsize, self.records.get(given[2])
        if held is None or declared != held:
            holds = "no such record" if held is None else f"{held:,} bytes"
            raise Refused(f"a storage that declares {declared:,} bytes for data/{given[2][:100]}, which holds {holds}",
                          "each storage's size as its record in the file")
        return self.made_of("storage", [pid])

    def step(self, name: str, arg: Any, position: int) -> None:
        stack = self.stack
        if name in ("BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT"):
            self.push(_Value("number", arg))
        elif name in ("BINUNICODE", "SHORT_BINSTRING"):
            self.push(_Value("string", arg, 1 + len(arg) // STRING_UNIT))
        elif name in ("NONE", "NEWTRUE", "NEWFALSE"):
            self.push(_Value("constant", {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}[name]))
        elif name == "GLOBAL":
            module, _, attribute = arg.partition(" ")
            self.push(_Value("global", Global(f"{'builtins' if module == '__builtin__' else module}.{attribute}")))
        elif name in ("EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET"):
            self.push(_Value(name[6:].lower()))
        elif name == "EMPTY_TUPLE":
            self.push(_Value("tuple", ()))
        elif name == "MARK":
            self.marks.append(len(stack))
        elif name in ("TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"):
            parts = self.pop_mark() if name == "TUPLE" else [stack.pop() for _ in range(int(name[-1]))][::-1]
            known = all(p.value is not _UNTRACKED for p in parts)
            self.push(self.made_of("tuple", parts, tuple(p.value for p in parts) if known else _UNTRACKED))
        elif name in ("APPEND", "APPENDS"):
            parts = [stack.pop()] if name == "APPEND" else self.pop_mark()
            if stack[-1].kind != "list":
                raise Refused(f"a checkpoint whose pickle appends to a {stack[-1].kind}", "appends to lists only")
            self.add_to(stack[-1], parts)
        elif name in ("SETITEM", "SETITEMS"):
            parts = stack[-2:] if name == "SETITEM" else self.pop_mark()
            if name == "SETITEM":
                del stack[-2:]
            if len(parts) % 2 or stack[-1].kind != "dict":
                raise Refused(f"a checkpoint whose pickle sets items of a {stack[-1].kind}", "items set in dicts only")
            self.add_keys(stack[-1], parts[0::2])
            self.add_to(stack[-1], parts)
        elif name == "BUILD":
            state = stack.pop()
            self.add_to(stack[-1], [state])
        elif name in ("REDUCE", "NEWOBJ"):
            arguments, function = stack.pop(), stack.pop()
            self.push(self.call(function, arguments))
        elif name == "BINPERSID":
            self.push(self.storage(stack.pop()))
        elif name in ("BINPUT", "LONG_BINPUT"):
            self.memo[arg] = stack[-1]
        elif name in ("BINGET", "LONG_BINGET"):
            self.push(self.memo[arg])
        elif name != "PROTO":
            raise Refused(f"the opcode {name} at byte {position} of data.pkl",
                          "the opcodes torch.save writes (torch.load(weights_only=True) reads no other)")


def scan_checkpoint(data: bytes) -> None:
    """Raise Refused when the checkpoint file `data` is past a bound (see the module's docstring);
    build nothing from it."""
    pickled, records = _pickle_of(data)
    _Scan(records).run(pickled)


def _check_tensors(loaded: Any) -> None:
    """Refuse tensors that span more bytes than their storages hold (a stride-0 view claiming 10**12
    elements costs nothing to load and terabytes to compare): at most MAX_BEYOND_STORAGE in all."""
    beyond, seen, pending = 0, set(), [loaded]
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            if value.device.type != "meta":
                span = value.numel() * value.element_size()
                beyond += max(span - value.untyped_storage().nbytes(), 0)
                if beyond > MAX_BEYOND_STORAGE:
                    raise Refused(f"a tensor of shape {tuple(value.shape)} over a storage of "
                                  f"{value.untyped_storage().nbytes():,} bytes", f"tensors that span at most "
                                  f"{MAX_BEYOND_STORAGE >> 20} MiB beyond their storages in all")
        elif isinstance(value, dict):
            pending += list(value.keys()) + list(value.values()) + list(getattr(value, "__dict__", {}).values())
        elif isinstance(value, (list, tuple, set)):
            pending += list(value)


def read_checkpoint(path: Path, *, inputs: str, see: str) -> Any:
    """`torch.load(path, weights_only=True)` of a file student code wrote, once `scan_checkpoint` has
    passed it; a refused file fails the test with what was found and what is read. `inputs` and
    `see` are the calling test's (what went in; its handout section)."""
    try:
        size = os.lstat(path).st_size
    except OSError:
        size = 0  # student_file_bytes says what is wrong
    try:
        if size > MAX_FILE_BYTES:  # refused before a byte of it is read: it would cost the test its size twice
            raise Refused(f"a file of {size:,} bytes", f"a checkpoint of at most {MAX_FILE_BYTES >> 20} MiB (these "
                          f"tests' models and optimizer states save in a few KiB)")
        data = student_file_bytes(Path(path), MAX_FILE_BYTES)
        scan_checkpoint(data)
        loaded = torch.load(io.BytesIO(data), weights_only=True)
        _check_tensors(loaded)
    except Refused as refused:
        raise AssertionError(explain(
            f"{Path(path).name}, read before torch.load(weights_only=True) builds anything from it (the test "
            "reads only checkpoints of bounded size and nesting)", inputs=inputs, expected=refused.expected,
            got=refused.found, see=f"{see}; what a checkpoint holds: {SECTION}")) from None
    return loaded

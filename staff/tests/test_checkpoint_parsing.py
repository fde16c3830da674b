"""tests/checkpoint_file.py: a checkpoint student code wrote is scanned before the test process builds
anything from it, and what a failure message shows of a loaded value is bounded.

Each attack file is a few hundred bytes to a few KB of hand-written pickle opcodes in a zip laid out
as torch.save lays one out. A refusal must come before torch.load runs (torch.load is made to fail
here), so that no test depends on how fast the machine is.
"""

from __future__ import annotations

import collections
import io
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy
import pytest
import torch

from adapters._parts import StandInCruncher
from tests import checkpoint_file
from tests.checkpoint_file import MAX_DEPTH, MAX_FILE_BYTES, read_checkpoint, scan_checkpoint
from tests.checks import explain
from tests.failure_output import MAX_SHOWN_CHARS, shown

PROTOCOL = b"\x80\x02"
INPUTS = "a checkpoint written by the code under test"
SEE = "handout/11_train.md §11.3"


def archive(pickled: bytes, records: dict[str, bytes] | None = None) -> bytes:
    """A zip laid out as torch.save's: archive/data.pkl, its storages as archive/data/KEY, stored."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zipped:
        zipped.writestr("archive/data.pkl", pickled)
        zipped.writestr("archive/byteorder", b"little")
        for key, data in (records or {}).items():
            zipped.writestr(f"archive/data/{key}", data)
        zipped.writestr("archive/version", b"3\n")
    return buffer.getvalue()


def put(index: int) -> bytes:
    return b"r" + struct.pack("<I", index)  # LONG_BINPUT


def get(index: int) -> bytes:
    return b"j" + struct.pack("<I", index)  # LONG_BINGET


def text(value: str) -> bytes:
    return b"X" + struct.pack("<I", len(value)) + value.encode()  # BINUNICODE


def written(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "step_000004.pt"
    path.write_bytes(data)
    return path


@pytest.fixture
def no_load(monkeypatch):
    """torch.load fails the test if it is reached: a refusal must come from the scan, before it."""
    def load(*args, **kwargs):
        raise AssertionError("torch.load was reached: the scan let the file through")
    monkeypatch.setattr(torch, "load", load)


def refusal(tmp_path: Path, data: bytes) -> str:
    with pytest.raises(AssertionError) as raised:
        read_checkpoint(written(tmp_path, data), inputs=INPUTS, see=SEE)
    message = str(raised.value)
    assert "torch.load was reached" not in message, message
    assert "handout/10_checkpoint.md §10.1" in message and SEE in message and INPUTS in message, message
    return message


def same(a, b) -> bool:
    """Equal nested values, tensors bit for bit (dtype, shape, values)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
                and torch.equal(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_an_honest_checkpoint_loads_unchanged(tmp_path):
    # Catches bounds too tight for honest files: a depth bound of 5 (an optimizer's state nests 9),
    # a scan that refuses every shared reference (tied weights, a storage class named once and used
    # by every tensor), one that refuses BUILD (a state_dict's OrderedDict gets its _metadata so),
    # one that keeps the value of small tuples only (bytes of 100 KB are _codecs.encode(text, 'latin1')).
    model = StandInCruncher(64, 4)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
    for _ in range(2):
        optimizer.zero_grad()
        model(torch.randn(8, 64)).square().mean().backward()
        optimizer.step()
    nested: dict = {"leaf": 1.5}
    for level in range(30):  # a student's config of 30 levels: honest, and far under the bound
        nested = {f"level{level}": nested}
    plain = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 2,
             "plain_model": plain, "tied": [plain["final.weight"], plain["final.weight"]],
             "notes": "lr 0.1, " * 200, "losses": [0.5 + i / 1000 for i in range(5000)], "loss": torch.tensor(0.25),
             "config": nested, "counts": collections.Counter("checkpoint"), "seen": {1, 2, 3}, "key": {(1, "a"): b"xy"},
             "blob": b"\x00\xff" * 50_000, "buffer": bytearray(b"data" * 10_000),
             "size": torch.Size([2, 3]), "device": torch.device("cpu"), "dtype": torch.bfloat16,
             "half": torch.ones(3, dtype=torch.bfloat16), "view": torch.arange(10)[2:7:2]}
    path = tmp_path / "checkpoint.pt"
    torch.save(state, path)
    loaded = read_checkpoint(path, inputs=INPUTS, see=SEE)
    assert same(loaded, torch.load(path, weights_only=True))
    assert same(loaded["model"], model.state_dict()) and same(loaded["optimizer"], optimizer.state_dict())
    assert loaded["iteration"] == 2 and loaded["tied"][0] is loaded["tied"][1]


def test_a_file_past_the_size_bound_is_refused_before_it_is_read(tmp_path, no_load):
    # Catches a bound on structure alone: a valid state dict plus one 240 MiB tensor of zeros passes every
    # other check and cost the test process its size twice (the bytes read, the storage built): 381 MiB.
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": {"w": torch.ones(4)}, "iteration": 1}, path)
    with path.open("r+b") as handle:  # a sparse tail: the size is what is judged, before any read
        handle.truncate(MAX_FILE_BYTES + 1)
    tracemalloc.start()
    try:
        with pytest.raises(AssertionError) as raised:
            read_checkpoint(path, inputs=INPUTS, see=SEE)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(raised.value)
    assert f"a file of {MAX_FILE_BYTES + 1:,} bytes" in message and "at most 32 MiB" in message, message
    assert peak < 1 << 20, f"the refusal read the file: {peak:,} bytes traced"


def test_references_shared_through_the_memo_are_refused_before_loading(tmp_path, no_load):
    # Catches a scan that counts each value once however often the memo hands it out: this file of
    # 1.5 KB builds a list of 4**40 leaves by reference, which torch.load makes in microseconds and
    # every traversal (comparing, formatting a message) then walks for ever.
    pickled = PROTOCOL + b"]K\x00a" + put(0)
    for level in range(1, 40):
        pickled += b"](" + get(level - 1) * 4 + b"e" + put(level)
    data = archive(pickled + b".")
    assert len(data) < 2000
    message = refusal(tmp_path, data)
    assert "counting a shared value each time it is used" in message, message
    tracemalloc.start()
    try:
        with pytest.raises(checkpoint_file.Refused):
            scan_checkpoint(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"the scan held {peak:,} bytes at its peak for a file of {len(data):,}"


def test_deep_nesting_is_refused_before_loading(tmp_path, no_load):
    # Catches a scan with no depth bound (the chain below is 5,000 values, far under the size
    # bound): hashing, comparing or printing it recurses 5,000 levels in the test process.
    depth = 5000
    message = refusal(tmp_path, archive(PROTOCOL + b"]" * depth + b"a" * (depth - 1) + b"."))
    assert f"nests more than {MAX_DEPTH} levels deep" in message, message
    dicts = tmp_path / "dicts"
    dicts.mkdir()
    nested_dicts = PROTOCOL + (b"}" + text("k")) * depth + b"N" + b"s" * depth + b"."
    message = refusal(dicts, archive(nested_dicts))
    assert f"nests more than {MAX_DEPTH} levels deep" in message, message


def test_a_dict_key_of_tuples_shared_through_the_memo_is_refused_before_loading(tmp_path, no_load):
    # Catches a scan that sizes lists and dicts but counts a tuple as one value: the key below is
    # (t, t) nested 24 times by reference, under 1 KB, and hashing it while the dict is built visits
    # 2**24 tuples (28 levels took 3 s of CPU inside torch.load, each level doubling it: 40 levels
    # would take hours). 24 levels keep this test short with such a scan, which then hashes the key.
    pickled = PROTOCOL + b"}K\x00\x85" + put(0)
    for level in range(1, 24):
        pickled += get(level - 1) + b"\x86" + put(level)
    data = archive(pickled + b"K\x01s.")
    assert len(data) < 1024
    message = refusal(tmp_path, data)
    assert "counting a shared value each time it is used" in message, message


def test_dict_keys_that_share_a_hash_are_refused_before_loading(tmp_path, no_load):
    # Catches a scan without the hash check: ints k * (2**61 - 1) + 1 all hash to 1, so a dict of n
    # of them takes n**2 comparisons to build (a file of a few MB would take hours).
    modulus = 2**61 - 1
    pickled = PROTOCOL + b"}("
    for k in range(1, 200):
        number = (k * modulus + 1).to_bytes(16, "little")
        pickled += b"\x8a\x10" + number + b"K\x00"  # LONG1 of 16 bytes, then the value 0
    message = refusal(tmp_path, archive(pickled + b"u."))
    assert "share a hash" in message, message


@pytest.mark.parametrize("call", ["OrderedDict of pairs", "set of a tuple"])
def test_keys_a_call_builds_from_its_argument_are_checked_too(tmp_path, no_load, call):
    # Catches a scan that checks only the keys SETITEMS adds and the list a set is given: the keys of
    # collections.OrderedDict([(k, 0), ...]) and of builtins.set((k, ...)) reach the container as the
    # call's argument (20,000 colliding keys took 9.9 s inside torch.load).
    keys = [b"\x8a\x10" + (k * (2**61 - 1) + 1).to_bytes(16, "little") for k in range(1, 200)]
    if call == "OrderedDict of pairs":
        body = b"ccollections\nOrderedDict\n](" + b"".join(key + b"K\x00\x86" for key in keys) + b"e\x85R"
    else:
        body = b"c__builtin__\nset\n(" + b"".join(keys) + b"t\x85R"
    message = refusal(tmp_path, archive(PROTOCOL + body + b"."))
    assert "share a hash" in message, message


def test_sizes_declared_beyond_the_file_are_refused_before_loading(tmp_path, no_load, monkeypatch):
    # Catches a scan that trusts declared sizes: a string of 4 GB in a file of 400 bytes, a storage
    # of 4 GB over a record of 16 bytes, a zip entry past the file's end, more zip entries than the
    # bound (refused before zipfile reads its directory), bytearray(10**10) and torch.FloatTensor(10**10)
    # (torch.load would allocate both).
    message = refusal(tmp_path, archive(PROTOCOL + b"X" + struct.pack("<I", 0xFFFFFFF0) + b"abc."))
    assert "expected 4294967280 bytes" in message, message

    numel = 10**9
    pid = (b"(" + text("storage") + b"ctorch\nFloatStorage\n" + text("0") + text("cpu") + b"J"
           + struct.pack("<i", numel) + b"tQ")
    rebuild = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00J" + struct.pack("<i", numel) + b"\x85K\x01\x85"
               + b"\x89ccollections\nOrderedDict\n)RtR")
    message = refusal(tmp_path, archive(PROTOCOL + b"}" + text("w") + rebuild + b"s.", {"0": bytes(16)}))
    assert "declares 4,000,000,000 bytes for data/0, which holds 16 bytes" in message, message

    honest = io.BytesIO()
    torch.save({"w": torch.ones(4)}, honest)
    data = bytearray(honest.getvalue())
    entry = data.index(b"PK\x01\x02")  # the central directory entry of archive/data/0
    while data[entry + 46:entry + 46 + 14] != b"archive/data/0":
        entry = data.index(b"PK\x01\x02", entry + 4)
    data[entry + 20:entry + 28] = struct.pack("<II", 1 << 31, 1 << 31)  # compressed and uncompressed sizes
    message = refusal(tmp_path, bytes(data))
    assert "declares 2,147,483,648 bytes, past the end of the file" in message, message

    monkeypatch.setattr(checkpoint_file, "MAX_ENTRIES", 3)
    monkeypatch.setattr(zipfile, "ZipFile", None)  # the count comes from the end record, before the directory
    message = refusal(tmp_path, honest.getvalue())
    assert "a zip archive of" in message and "entries" in message, message
    monkeypatch.undo()
    monkeypatch.setattr(torch, "load", lambda *args, **kwargs: pytest.fail("torch.load was reached"))

    ten_gigabytes = b"\x8a\x06" + (10**10).to_bytes(6, "little") + b"\x85R."
    for function in (b"c__builtin__\nbytearray\n", b"ctorch\nFloatTensor\n"):
        message = refusal(tmp_path, archive(PROTOCOL + function + ten_gigabytes))
        assert "whose pickle calls" in message, message


def test_an_archive_read_otherwise_by_torch_than_by_the_scan_is_refused(tmp_path, no_load):
    # Catches a scan whose zip reading differs from torch's: a second pickle named archive/DATA.pkl
    # (torch's reader finds a name whatever its case, zipfile does not: the scan checked the honest
    # data.pkl and torch.load built the other, a key of tuples 40 deep, ~100 minutes to hash); an entry
    # outside the archive's one folder; a directory that lists one entry 5.7 million times under an
    # end record that declares 1 (zipfile built an object for each: 2 GiB of the test process).
    honest = io.BytesIO()
    torch.save({"w": torch.ones(4)}, honest)
    folder = zipfile.ZipFile(io.BytesIO(honest.getvalue())).namelist()[0].split("/")[0]
    message = refusal(tmp_path, rewritten(honest.getvalue(), added={f"{folder}/DATA.pkl": PROTOCOL + b"N."}))
    assert "two entries of the same name (letter case aside)" in message, message
    elsewhere = rewritten(honest.getvalue(), added={"other/data.pkl": PROTOCOL + b"N."})
    assert "not all in one folder" in refusal(tmp_path, elsewhere)

    data = bytearray(honest.getvalue())
    end = len(data) - 22
    entries, size, at = struct.unpack_from("<HII", data, end + 10)
    directory = bytes(data[at:at + size])
    first = directory[:directory.index(b"PK\x01\x02", 4)]  # one directory entry, listed 2,000 times
    grown = data[:at] + first * 2000
    grown += struct.pack("<4sHHHHII", b"PK\x05\x06", 0, 0, 1, 1, len(first) * 2000, at) + b"\0\0"
    message = refusal(tmp_path, bytes(grown))
    assert f"a zip directory of {len(first) * 2000:,} bytes for 1 entries" in message, message


def rewritten(honest: bytes, body=lambda name, data: data, added: dict[str, bytes] | None = None) -> bytes:
    """torch.save's archive `honest` copied entry by entry (stored), each entry's data `body(name, data)`,
    then the entries of `added` (name: data)."""
    copy = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(honest)) as source, zipfile.ZipFile(copy, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            target.writestr(info, body(info.filename, source.read(info)))
        for name, data in (added or {}).items():
            target.writestr(name, data)
    return copy.getvalue()


def two_archives(honest: bytes, pickled: bytes) -> bytes:
    """`honest` (torch.save's archive) behind a second archive of the same entries but data.pkl
    `pickled`, with a zip64 end record for the second's directory, `honest`'s zip64 locator pointed at
    that record: Python's zipfile (3.11) reads the honest directory (the record right before the
    locator, every offset shifted by the bytes in front); torch's reader the other (the record the
    locator names)."""
    hidden = rewritten(honest, lambda name, body: pickled if name.endswith("/data.pkl") else body)
    count, size, at = struct.unpack_from("<HII", hidden, len(hidden) - 22 + 10)
    record = b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, count, count, size, at)
    shown = bytearray(honest)
    locator = len(honest) - 22 - 20
    assert shown[locator:locator + 4] == b"PK\x06\x07", "torch.save wrote no zip64 locator"
    struct.pack_into("<Q", shown, locator + 8, len(hidden))
    return hidden + record + bytes(shown)


def test_an_archive_whose_directories_differ_by_reader_is_refused(tmp_path, no_load, monkeypatch):
    # Catches a scan that reads another directory than torch.load: a second archive in front of
    # torch.save's, whose zip64 locator names the second's end record (zipfile read the honest pickle,
    # torch the hidden one: a key 40 tuples deep, hours to hash); torch.save's archive behind bytes of
    # another (zipfile shifts the directory's offsets by them, torch's reader does not); a zip64 record
    # whose values differ from the end record's (zipfile takes the zip64 record's, torch's reader the end
    # record's where they are not markers). And, should a layout pass those checks, the scan compares its
    # reading with torch's own reader's.
    honest = io.BytesIO()
    torch.save({"w": torch.ones(4), "iteration": 3}, honest)
    honest = honest.getvalue()
    hidden = PROTOCOL + b"}" + text("iteration") + b"K\x07s."
    message = refusal(tmp_path, two_archives(honest, hidden))
    assert "zip64 end record at byte" in message and "right before its locator" in message, message

    with zipfile.ZipFile(io.BytesIO(honest)) as source:
        front = archive(source.read(source.namelist()[0]))
    behind = bytearray(honest)  # its zip64 locator pointed at its record where it now lies
    locator = len(behind) - 22 - 20
    struct.pack_into("<Q", behind, locator + 8, struct.unpack_from("<Q", behind, locator + 8)[0] + len(front))
    message = refusal(tmp_path, front + bytes(behind))
    assert "a zip directory declared at bytes" in message and "no bytes before the archive" in message, message

    moved = bytearray(honest)
    end = len(moved) - 22
    struct.pack_into("<I", moved, end + 16, struct.unpack_from("<I", moved, end + 16)[0] - 1)
    assert "end records that disagree" in refusal(tmp_path, bytes(moved))

    def as_zipfile_reads(data: bytes) -> tuple[int, int]:
        with zipfile.ZipFile(io.BytesIO(data)) as zipped:
            return len(zipped.infolist()), zipped.start_dir
    monkeypatch.setattr(checkpoint_file, "_archive_directory", as_zipfile_reads)
    message = refusal(tmp_path, two_archives(honest, hidden))
    assert "torch's reader reads differently" in message, message


def test_a_long_record_beside_the_pickle_is_refused_before_loading(tmp_path, no_load):
    # Catches a scan that bounds data.pkl and the storages only: torch.load reads the byteorder record
    # first and raises ValueError("Unknown endianness type: " + its text), so a record of 192 MiB became
    # an error message of 192 MiB in the test process (its report, its memory).
    honest = io.BytesIO()
    torch.save({"w": torch.ones(4)}, honest)
    long = rewritten(honest.getvalue(), lambda name, body: b"A" * 5000 if name.endswith("/byteorder") else body)
    message = refusal(tmp_path, long)
    assert "byteorder' of 5,000 bytes" in message and "at most 1,024" in message, message


def test_a_tensor_as_a_dict_key_is_refused_before_loading(tmp_path, no_load):
    # Catches a scan that lets a tensor be a key: the tests format keys (sorted(..., key=str), paths in
    # their messages), and str() of a bool view of shape (2,) * 21 over one byte prints every one of its
    # 2,097,152 elements (the test process peaked 1.1 GiB over the reference's).
    buffer = io.BytesIO()
    torch.save({"iteration": 2, torch.zeros(1, dtype=torch.bool).expand((2,) * 21): "notes"}, buffer)
    message = refusal(tmp_path, buffer.getvalue())
    assert "a dict key (or set member) that is a tensor" in message, message


def test_a_tensor_spanning_far_beyond_its_storage_is_refused(tmp_path):
    # Catches a reader with no check after torch.load: a stride-0 view of 10**12 elements over 4
    # bytes loads at no cost, and the test's comparison with an int would then allocate a terabyte.
    pid = b"(" + text("storage") + b"ctorch\nFloatStorage\n" + text("0") + text("cpu") + b"K\x01tQ"
    size = b"\x8a\x06" + (10**12).to_bytes(6, "little")  # LONG1, signed
    rebuild = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00" + size + b"\x85K\x00\x85"
               + b"\x89ccollections\nOrderedDict\n)RtR")
    data = archive(PROTOCOL + b"}" + text("iteration") + rebuild + b"s.", {"0": bytes(4)})
    scan_checkpoint(data)  # the pickle itself is small and well-formed: the tensor is what is refused
    message = refusal(tmp_path, data)
    assert "a tensor of shape (1000000000000,) over a storage of 4 bytes" in message, message


def test_what_a_message_shows_of_a_huge_value_is_bounded():
    # Catches repr(value) cut afterwards (truncated(repr(value))): the repr of the shared list below
    # is 3 MB built before it is cut, and a deep one raises RecursionError.
    shared: list = [0]
    for _ in range(10):
        shared = [shared] * 4
    deep: list = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    huge = [shared, deep, "x" * 10**6, list(range(10**5)), 10**20000]
    tracemalloc.start()
    try:
        outlines = [shown(value) for value in huge]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(len(outline) <= MAX_SHOWN_CHARS for outline in outlines), [len(o) for o in outlines]
    assert peak < 1 << 20, f"formatting held {peak:,} bytes at its peak"
    assert outlines[0].startswith("[[[[") and "..." in outlines[1] and "bits" in outlines[4]
    for small in ([1, (2,)], {"a": torch.ones(2)}, collections.OrderedDict(a=1), "text", None, set()):
        assert shown(small) == repr(small)
    message = explain("the iteration", inputs="a checkpoint", expected=4, got=shared, see="handout/10_checkpoint.md")
    assert len(message) < MAX_SHOWN_CHARS + 200


def test_an_array_of_many_short_dimensions_is_shown_by_shape_not_by_elements():
    # Catches a tensor or numpy array counted as one value: torch's and numpy's reprs summarize only
    # dimensions longer than six, so a view of shape (2,) * 21 over one byte prints 2,097,152 elements
    # (seconds of CPU and ~2 GB in the test process for one value of a 1-byte reply).
    dims = 21
    view = torch.empty(0, dtype=torch.bool).set_(torch.UntypedStorage(1), 0, [2] * dims, [0] * dims)
    array = numpy.lib.stride_tricks.as_strided(numpy.zeros(1, dtype=numpy.float32), (2,) * dims, (0,) * dims)
    for value in (view, array, [view], {"weights": array}):
        outline = shown(value)
        assert len(outline) < 500 and "2,097,152 elements" in outline and "(2, 2, 2" in outline, outline[:500]
    assert "torch.bool" in shown(view) and "float32" in shown(array)
    for small in (torch.arange(6.0).reshape(2, 3), numpy.arange(6).reshape(2, 3), [torch.ones(2, 2)] * 3):
        assert shown(small) == repr(small)

"""Every shape a student really uploads in (`upload_shapes`), taken in by the intake: the code is graded
from where a person would find it, byte for byte, and the ambiguous ones score 0 with a message naming
what was found and how to upload. The common shapes are graded end to end by the bundle's
run_autograder (`test_bundle`, `test_gradescope_container`) and the batch (`test_grade`)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from staff import samples
from staff.intake.submission import MAX_CANDIDATES, SubmissionError, lay_package
from staff.intake.upload import MAX_ZIPS
from staff.tests import upload_shapes
from staff.tests.upload_shapes import SHAPES, Shape


@pytest.fixture(scope="module")
def code(tmp_path_factory) -> Path:
    return samples.reference(tmp_path_factory.mktemp("code"))


def _empty(folder: Path) -> Path:
    folder.mkdir(parents=True)
    return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("shape", [s for s in SHAPES if s.graded_from is not None], ids=lambda s: s.name)
def test_the_code_is_taken_from_where_a_person_would_find_it(shape: Shape, code: Path, tmp_path: Path):
    (tmp_path / "upload").mkdir()
    upload = shape.build(tmp_path / "upload", code)
    try:
        intake = lay_package(upload, tmp_path / "laid")
    except SubmissionError as error:
        pytest.fail(f"{shape.name}: the intake refused an upload holding one copy of the code: {error}")
    expected = _files(code)
    if shape.name.endswith("without-init"):
        expected["__init__.py"] = b""  # made empty so that the package is a regular one
    assert _files(tmp_path / "laid") == expected, f"{shape.name}: the files laid out are not the upload's code"
    assert intake.source == shape.graded_from
    assert set(intake.files) == set(expected) - ({"__init__.py"} if shape.name.endswith("without-init") else set())
    # Each note is one the shape expects: adapters/ (same module names), .venv's installed copy, a notebook's
    # checkpoints and macOS's forks are not the student's stray copies.
    assert len(intake.notes) == len(shape.not_graded), f"{shape.name}: notes {intake.notes}"
    for note in shape.not_graded:
        assert any(note in said for said in intake.notes), f"{shape.name}: no note says {note!r}: {intake.notes}"
    line = intake.describe()
    assert line.startswith(f"Graded {len(intake.files)} files from {shape.graded_from} of your upload: ")
    assert "flops.py (" in line


@pytest.mark.parametrize("shape", [s for s in SHAPES if s.graded_from is None], ids=lambda s: s.name)
def test_an_upload_that_cannot_be_decided_is_explained(shape: Shape, code: Path, tmp_path: Path):
    (tmp_path / "upload").mkdir()
    upload = shape.build(tmp_path / "upload", code)
    with pytest.raises(SubmissionError) as raised:
        lay_package(upload, tmp_path / "laid")
    said = str(raised.value)
    for fragment in shape.message:
        assert fragment in said, f"{shape.name}: the message does not say {fragment!r}:\n{said}"
    assert "unsafe" not in said and str(tmp_path) not in said


def _refused(upload: Path, laid: Path) -> str:
    with pytest.raises(SubmissionError) as raised:
        lay_package(upload, laid)
    return str(raised.value)


def test_links_and_special_files_are_never_followed_or_read(code: Path, tmp_path: Path):
    # Mistakes this catches: a walk that follows a link into the grading machine's reference (a dragged
    # "flops.py" that is a link, a cs336_basics/ that is one), or opens a FIFO and blocks the grader.
    dragged = upload_shapes.files_dragged_in(_empty(tmp_path / "dragged"), code)
    (dragged / "flops.py").unlink()
    (dragged / "flops.py").symlink_to(code / "flops.py")
    assert "symbolic links are not accepted: flops.py in the top level" in _refused(dragged, tmp_path / "a")
    linked = _empty(tmp_path / "linked")
    (linked / "cs336_basics").symlink_to(code, target_is_directory=True)
    assert "cs336_basics/ is a symbolic link" in _refused(linked, tmp_path / "b")
    fifo = upload_shapes.make_submission_unpacked(_empty(tmp_path / "fifo"), code)
    os.mkfifo(fifo / "cs336_basics" / "notes.py")
    os.mkfifo(fifo / "stray.zip")
    intake = lay_package(fifo, tmp_path / "c")
    assert "notes.py" not in intake.files and "flops.py" in intake.files


def test_zips_are_opened_within_bounds(code: Path, tmp_path: Path):
    # Mistakes this catches: opening every zip of an upload (each holds a file open: a thousand exhaust
    # the grader's), zips nested without end, and reading every one of many copies to compare them.
    many = _empty(tmp_path / "many")
    for i in range(MAX_ZIPS + 4):
        with zipfile.ZipFile(many / f"junk-{i:02}.zip", "w") as zf:
            zf.writestr("notes.txt", "nothing")
    assert f"more than {MAX_ZIPS} zips" in _refused(many, tmp_path / "a")
    deep = upload_shapes.zip_inside_a_zip(_empty(tmp_path / "deep"), code)
    with zipfile.ZipFile(deep / "outermost.zip", "w") as zf:
        zf.writestr("outer.zip", (deep / "outer.zip").read_bytes())
    (deep / "outer.zip").unlink()
    said = _refused(deep, tmp_path / "b")
    assert "a zip inside a zip inside a zip is not opened" in said and "no cs336_basics/ folder" in said
    copies = _empty(tmp_path / "copies")
    for i in range(MAX_CANDIDATES + 1):
        upload_shapes.make_submission_unpacked(_empty(copies / f"copy-{i}"), code)
    said = _refused(copies, tmp_path / "c")
    assert f"holds {MAX_CANDIDATES + 1} cs336_basics/ folders" in said and "make_submission.sh" in said


def test_climbing_and_absolute_names_are_refused_however_spelled(code: Path, tmp_path: Path):
    # Mistake this catches: reading backslashes as folders (for Windows zips) and so letting
    # "..\\..\\escape.py" or "C:\\x.py" climb out of the package.
    for i, name in enumerate(("cs336_basics\\..\\..\\escape.py", "C:\\cs336_basics\\flops.py", "/cs336_basics/a.py")):
        members = upload_shapes._members(code)
        members[name] = b"print('out')\n"
        archive = upload_shapes._zip(tmp_path / f"evil-{i}.zip", members)
        assert "unsafe path in zip" in _refused(archive, tmp_path / f"laid-{i}")
    assert not (tmp_path / "escape.py").exists()

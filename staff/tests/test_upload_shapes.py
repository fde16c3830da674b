"""Every shape a student really uploads in (`upload_shapes`), taken in by the intake: the code is graded
from where a person would find it, byte for byte, and the ambiguous ones score 0 with a message naming
what was found and how to upload. The common shapes are graded end to end by the bundle's
run_autograder (`test_bundle`, `test_gradescope_container`) and the batch (`test_grade`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from staff import samples
from staff.submission import SubmissionError, lay_package
from staff.tests.upload_shapes import SHAPES, Shape


@pytest.fixture(scope="module")
def code(tmp_path_factory) -> Path:
    return samples.reference(tmp_path_factory.mktemp("code"))


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
    assert line.startswith(f"Graded {len(intake.files)} files from {shape.graded_from}") and "flops.py (" in line


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


def test_every_shape_of_the_issue_is_in_the_corpus():
    names = {s.name for s in SHAPES}
    assert len(names) == len(SHAPES)
    assert {s.name for s in SHAPES if s.common} == {"make-submission-zip", "repository-folder-unpacked",
                                                    "files-dragged-in", "windows-zip"}

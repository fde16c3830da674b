"""Where each problem's files live: the one owner of the file-name conventions.

A problem is declared once, in `PROBLEMS` (tests/problems.py: number, title, handout page, hidden
points, module). Its other files are found from that declaration by these names, and nowhere else:

| file | name |
|---|---|
| solution module | `cs336_basics/<module>.py` |
| adapters | `adapters/<module>.py` |
| public tests | `tests/test_NN_<anything>.py` (one file) |
| hidden tests | `staff/hidden/test_hidden_NN_<anything>.py` (one file) |
| variants for `staff validate` | `staff/validate/variants/pNN_<module>.toml` |

NN is the problem's number with two digits.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.problems import PROBLEMS

PUBLIC_TESTS, HIDDEN_TESTS = "tests", "staff/hidden"
VARIANTS = "staff/validate/variants"
_TEST_FILE = re.compile(r"^test_(?:hidden_)?(\d{2})_\w+\.py$")


def _module(number: int, module: str | None) -> str:
    return module if module is not None else PROBLEMS[number].module


# Each name takes the problem's module from PROBLEMS, or from `module` for a problem not declared yet
# (`staff new-problem` names the files it is about to write with these same functions).
def module_file(repo: Path, number: int, module: str | None = None) -> Path:
    return repo / "cs336_basics" / f"{_module(number, module)}.py"


def adapter_file(repo: Path, number: int, module: str | None = None) -> Path:
    return repo / "adapters" / f"{_module(number, module)}.py"


def handout_page(number: int, module: str) -> str:
    """The page a new problem gets (a declared problem's page is the one PROBLEMS names)."""
    return f"handout/{number:02d}_{module}.md"


def new_public_test_file(repo: Path, number: int, module: str) -> Path:
    return repo / PUBLIC_TESTS / f"test_{number:02d}_{module}.py"


def new_hidden_test_file(repo: Path, number: int, module: str) -> Path:
    return repo / HIDDEN_TESTS / f"test_hidden_{number:02d}_{module}.py"


def public_test_files(repo: Path, number: int) -> list[Path]:
    return sorted((repo / PUBLIC_TESTS).glob(f"test_{number:02d}_*.py"))


def hidden_test_files(repo: Path, number: int) -> list[Path]:
    return sorted((repo / HIDDEN_TESTS).glob(f"test_hidden_{number:02d}_*.py"))


def variants_file(repo: Path, number: int, module: str | None = None) -> Path:
    return repo / VARIANTS / f"p{number:02d}_{_module(number, module)}.toml"


def problem_of_test_file(path: Path) -> int | None:
    """The problem number a test file's name gives (`test_03_einops.py`, `test_hidden_03_einops.py`),
    or None for a name outside the convention."""
    match = _TEST_FILE.match(path.name)
    return int(match.group(1)) if match else None


def all_test_files(repo: Path) -> list[Path]:
    """Every test module of both suites, public first."""
    return sorted((repo / PUBLIC_TESTS).glob("test_*.py")) + sorted((repo / HIDDEN_TESTS).glob("test_*.py"))

"""setup.sh on a bare Ubuntu 22.04 image, acted by stubs: no uv and no pip, so apt installs pip, pip the
pinned uv, uv the pinned Python and the environment with it; a failing step stops it and is named.

The stubs (apt-get, python3, uv) log each call and do what the real command would leave behind; the
real steps run in test_bundle.py (uv and the environment; the internet is not reachable here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from staff.cli import main
from staff.gradescope.bundle import unpack
from staff.gradescope.pins import python_pin, uv_pin
from staff.grading.grade import REPO_ROOT
from staff.release.proc import ReleaseError

APT_GET = """#!/bin/bash
echo "apt-get $*" >> "$STUB_LOG"
[ -n "${APT_FAILS:-}" ] && [ "$1" = install ] && exit 100
[ "$1" = install ] && touch "$STUB_DIR/pip-installed"
exit 0
"""
PYTHON3 = """#!/bin/bash
echo "python3 $*" >> "$STUB_LOG"
if [ "$*" = "-m pip --version" ]; then [ -e "$STUB_DIR/pip-installed" ]; exit; fi
if [ "$1 $2 $3" = "-m pip install" ]; then
  [ -e "$STUB_DIR/pip-installed" ] || exit 1
  while [ "$#" -gt 0 ]; do [ "$1" = --prefix ] && prefix="$2"; last="$1"; shift; done
  # where Debian's pip puts scripts under an explicit prefix
  mkdir -p "$prefix/local/bin" && sed "s/@VERSION@/${last#uv==}/" "$STUB_DIR/uv.in" > "$prefix/local/bin/uv"
  chmod +x "$prefix/local/bin/uv"
  exit 0
fi
exit 1
"""
UV = """#!/bin/bash
echo "uv $*" >> "$STUB_LOG"
[ "$1" = --version ] && { echo "uv @VERSION@ (stub)"; exit 0; }
if [ "$1" = sync ]; then
  while [ "$#" -gt 0 ]; do [ "$1" = --python ] && version="${BUILT_PYTHON:-$2}"; shift; done
  mkdir -p "$UV_PROJECT_ENVIRONMENT/bin"
  printf '#!/bin/bash\\necho %s\\n' "$version" > "$UV_PROJECT_ENVIRONMENT/bin/python"
  chmod +x "$UV_PROJECT_ENVIRONMENT/bin/python"
fi
exit 0
"""


@pytest.fixture(scope="module")
def setup_sh(tmp_path_factory) -> Path:
    """setup.sh as `staff bundle` writes it."""
    base = tmp_path_factory.mktemp("bundle")
    assert main(["bundle", str(base / "autograder.zip"), "--allow-uncommitted"]) == 0
    unpack(base / "autograder.zip", base / "source")
    return base / "source" / "setup.sh"


def run_bare(setup: Path, tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run `setup` where only the stubs and coreutils are on PATH; the result and the stubs' log."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("apt-get", APT_GET), ("python3", PYTHON3), ("uv.in", UV)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path), "STUB_LOG": str(tmp_path / "log"),
           "STUB_DIR": str(stubs), "AUTOGRADER_ROOT": str(root), "CS336_ENV": str(tmp_path / "env"), **extra}
    done = subprocess.run(["bash", str(setup)], env=env, capture_output=True, text=True, timeout=60)
    log = (tmp_path / "log").read_text().splitlines() if (tmp_path / "log").exists() else []
    return done, log


def test_the_bundle_writes_the_pins_and_the_script_parses(setup_sh):
    text = setup_sh.read_text()
    pinned = (REPO_ROOT / ".python-version").read_text().strip()
    python = python_pin(REPO_ROOT)
    assert python.startswith(f"{pinned}.") or python == pinned
    assert f'PYTHON_VERSION="{python}"' in text and f'UV_VERSION="{uv_pin()}"' in text and "@" not in text
    assert "set -euo pipefail" in text
    assert subprocess.run(["bash", "-n", str(setup_sh)]).returncode == 0


def test_a_setup_sh_not_made_by_staff_bundle_fails_loudly(tmp_path):
    env = {**os.environ, "AUTOGRADER_ROOT": str(tmp_path), "CS336_ENV": str(tmp_path / "env")}
    done = subprocess.run(["bash", str(REPO_ROOT / "staff" / "gradescope" / "autograder_files" / "setup.sh")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "is not a version" in done.stderr and not (tmp_path / "env").exists()


def test_the_python_pin_agrees_with_python_version_and_requires_python(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n')
    (tmp_path / ".python-version").write_text("3.11\n")
    assert python_pin(tmp_path, "3.11.7") == "3.11.7"
    with pytest.raises(ReleaseError, match="pins 3.11"):
        python_pin(tmp_path, "3.12.1")  # the newest CPython: never what the bundle installs
    with pytest.raises(ReleaseError, match="pins 3.11"):
        python_pin(tmp_path, "3.110.0")
    (tmp_path / ".python-version").write_text("3.10\n")
    with pytest.raises(ReleaseError, match="requires-python"):
        python_pin(tmp_path, "3.10.12")  # Ubuntu 22.04's python3
    (tmp_path / ".python-version").write_text("latest\n")
    with pytest.raises(ReleaseError, match="expected a version"):
        python_pin(tmp_path, "3.11.7")


def test_a_bare_image_gets_pip_from_apt_then_the_pinned_uv_and_python(setup_sh, tmp_path):
    done, log = run_bare(setup_sh, tmp_path)
    assert done.returncode == 0, done.stderr
    python, uv = python_pin(REPO_ROOT), uv_pin()
    expected = ["python3 -m pip --version", "apt-get update",
                "apt-get install -y --no-install-recommends ca-certificates python3 python3-pip",
                f"python3 -m pip install --quiet --no-cache-dir --prefix {tmp_path}/env/uv uv=={uv}",
                f"uv python install {python}", f"uv sync --locked --no-install-project --python {python}"]
    assert [line for line in log if line != "uv --version"] == expected
    assert f"Python {python}, uv {uv}" in done.stdout


def test_a_failing_apt_stops_the_set_up_and_says_so(setup_sh, tmp_path):
    done, log = run_bare(setup_sh, tmp_path, APT_FAILS="1")
    assert done.returncode != 0 and "FAILED while installing pip with apt" in done.stderr
    assert not any(line.startswith("uv ") for line in log)


def test_an_environment_with_another_python_fails_the_set_up(setup_sh, tmp_path):
    done, _ = run_bare(setup_sh, tmp_path, BUILT_PYTHON="3.13.0")
    assert done.returncode != 0 and "not the pinned" in done.stderr and "FAILED while checking" in done.stderr
    assert "environment ready" not in done.stdout

#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (network on): it installs
# uv and, with it, exactly the Python and the locked environment this bundle was tested with. It
# needs nothing of the base image but apt (Ubuntu 22.04's python3 is 3.10, and neither pip nor curl
# is promised). The environment goes to $CS336_ENV (default /opt/cs336), readable by everyone,
# because student code runs as a user of its own and must import torch; the grader's own files
# (this folder, with the hidden tests) are closed to everyone but root.
#
# UV_PYTHON_PREFERENCE=only-system (for a machine without the internet: the staff tests) takes an
# installed interpreter of exactly the pinned version instead of installing one.
set -euo pipefail
PYTHON_VERSION="@PYTHON_VERSION@"  # the Python the lock was tested with, written by `staff bundle`
UV_VERSION="@UV_VERSION@"          # the uv that reads this uv.lock, written by `staff bundle`
ROOT="${AUTOGRADER_ROOT:-/autograder}"
ENV_DIR="${CS336_ENV:-/opt/cs336}"
export UV_PROJECT_ENVIRONMENT="$ENV_DIR/venv" UV_PYTHON_INSTALL_DIR="$ENV_DIR/python" UV_COMPILE_BYTECODE=1
export UV_PYTHON_PREFERENCE="${UV_PYTHON_PREFERENCE:-only-managed}" UV_PYTHON_DOWNLOADS=manual
step="starting"
trap 'echo "cs336 autograder set-up FAILED while $step (exit $?); see the output above" >&2' ERR
say() { step="$1"; echo "cs336 autograder set-up: $1"; }

for pin in "$PYTHON_VERSION" "$UV_VERSION"; do
  if [[ ! "$pin" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "cs336 autograder set-up FAILED: the pin '$pin' is not a version; build the bundle with \`staff bundle\`" >&2
    exit 1
  fi
done
mkdir -p "$ENV_DIR"

uv_is_pinned() { command -v uv >/dev/null 2>&1 && [[ "$(uv --version)" == "uv $UV_VERSION"* ]]; }
if ! uv_is_pinned; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    say "installing pip with apt (the base image has no pip)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends ca-certificates python3 python3-pip
  fi
  say "installing uv $UV_VERSION with pip"
  python3 -m pip install --quiet --no-cache-dir --prefix "$ENV_DIR/uv" "uv==$UV_VERSION"
  # Debian's pip may put it under PREFIX/local/bin rather than PREFIX/bin: look for it.
  uv_bin="$(find "$ENV_DIR/uv" -path '*/bin/uv' -type f | head -n 1)"
  export PATH="$(dirname "${uv_bin:-$ENV_DIR/uv/bin/uv}"):$PATH"
  uv_is_pinned || { echo "uv $UV_VERSION is not on PATH after installing it (found: $(uv --version 2>&1))" >&2; false; }
fi

if [ "$UV_PYTHON_PREFERENCE" != "only-system" ]; then
  say "installing Python $PYTHON_VERSION with uv"
  uv python install "$PYTHON_VERSION"
fi

say "building the locked environment with Python $PYTHON_VERSION"
cd "$ROOT/source"
uv sync --locked --no-install-project --python "$PYTHON_VERSION"
built="$("$ENV_DIR/venv/bin/python" -c 'import platform; print(platform.python_version())')"
if [ "$built" != "$PYTHON_VERSION" ]; then
  say "checking the environment's Python"
  echo "the environment runs Python $built, not the pinned $PYTHON_VERSION" >&2
  false
fi

say "opening the environment to the worker's user"
chmod -R a+rX "$ENV_DIR"
chmod 700 "$ROOT/source"
echo "cs336 autograder: environment ready in $ENV_DIR (Python $PYTHON_VERSION, uv $UV_VERSION)"

#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: it installs uv and the
# locked environment. The environment goes to $CS336_ENV (default /opt/cs336), readable by everyone,
# because student code runs as a user of its own and must import torch; the grader's own files
# (this folder, with the hidden tests) are closed to everyone but root.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
ENV_DIR="${CS336_ENV:-/opt/cs336}"
export UV_PROJECT_ENVIRONMENT="$ENV_DIR/venv" UV_PYTHON_INSTALL_DIR="$ENV_DIR/python" UV_COMPILE_BYTECODE=1
mkdir -p "$ENV_DIR"
if ! command -v uv >/dev/null 2>&1; then
  if command -v python3 >/dev/null 2>&1 && python3 -m pip install --quiet uv 2>/dev/null; then :
  else
    curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR="$ENV_DIR/bin" sh
    export PATH="$ENV_DIR/bin:$PATH"
  fi
fi
cd "$ROOT/source"
uv sync --locked --no-install-project
chmod -R a+rX "$ENV_DIR"
chmod 700 "$ROOT/source"
echo "cs336 autograder: environment ready in $ENV_DIR"

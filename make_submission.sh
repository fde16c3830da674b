#!/usr/bin/env bash
# Make the archive you upload to Gradescope: run the public tests (for your information only), then
# zip the Python files of cs336_basics/, the one folder that is graded.
#
#   ./make_submission.sh                     writes cs336-basics-submission.zip
#   ./make_submission.sh -o my-name.zip      writes my-name.zip
#   TEST_TIMEOUT=120 ./make_submission.sh    gives the tests at most 120 s (default 600)
#   ./make_submission.sh --skip-tests        zips without running the tests
#
# A failing, slow or broken test run never stops the zip from being written.
set -uo pipefail
cd "$(dirname "$0")" || exit 1

ARCHIVE="cs336-basics-submission.zip"
RUN_TESTS=1
TEST_TIMEOUT="${TEST_TIMEOUT:-600}"
MAX_FILE_BYTES=$((1024 * 1024))      # one file larger than this is left out: source code is never this big
MAX_TOTAL_BYTES=$((50 * 1024 * 1024))  # the grader refuses a package larger than this ...
MAX_FILES=2000                       # ... or with more files than this

while [ $# -gt 0 ]; do
  case "$1" in
    -o|--output) ARCHIVE="${2:?-o needs a file name}"; shift 2 ;;
    --skip-tests) RUN_TESTS=0; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make_submission.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$ARCHIVE" in *.zip) ;; *) ARCHIVE="$ARCHIVE.zip" ;; esac

warn() { printf 'WARNING: %s\n' "$*" >&2; }

# Run "$@" for at most $1 seconds; returns its status, or 124 when it was stopped.
run_with_timeout() {
  local seconds="$1"; shift
  "$@" </dev/null &
  local pid=$!
  local waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge "$seconds" ]; then
      kill -TERM "$pid" 2>/dev/null; sleep 2; kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      return 124
    fi
    sleep 1; waited=$((waited + 1))
  done
  wait "$pid"
}

if [ ! -d cs336_basics ]; then
  echo "make_submission.sh: no cs336_basics/ folder next to this script; nothing to submit" >&2
  exit 1
fi

if [ "$RUN_TESTS" -eq 1 ]; then
  if command -v uv >/dev/null 2>&1; then
    echo "==> running the public tests (at most ${TEST_TIMEOUT} s; the zip is made whatever happens)"
    run_with_timeout "$TEST_TIMEOUT" uv run pytest -q --tb=line
    status=$?
    case "$status" in
      0) echo "==> every public test passed" ;;
      124) warn "the tests did not finish within ${TEST_TIMEOUT} s and were stopped; making the zip anyway" ;;
      1) warn "some public tests failed (see the table above); making the zip anyway" ;;
      *) warn "pytest could not run the tests (exit status $status); making the zip anyway" ;;
    esac
  else
    warn "uv is not installed, so the tests were not run (https://docs.astral.sh/uv/)"
  fi
fi

PYTHON=""
for candidate in python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 \
     && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
    PYTHON="$candidate"; break
  fi
done
if [ -z "$PYTHON" ]; then
  if command -v uv >/dev/null 2>&1; then PYTHON="uv run --no-project python"; else
    echo "make_submission.sh: found neither python3 nor uv to write the zip" >&2; exit 1
  fi
fi

# Changes outside cs336_basics/ are not graded: the graders use their own adapters/ and tests/. In a git
# checkout, git says what changed; elsewhere (the release's zip, unpacked), .release-sums does: the sha256 of
# every file the release shipped outside cs336_basics/.
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  outside=""
  while IFS= read -r line; do
    case "${line:3}" in *.zip) ;; *) outside="$outside    $line"$'\n' ;; esac  # archives are not work
  done < <(git status --porcelain --untracked-files=all -- . ':(exclude)cs336_basics' 2>/dev/null)
  if [ -n "$outside" ]; then
    warn "these changes are outside cs336_basics/ and will not be graded:"
    printf '%s' "$outside" >&2
  fi
elif [ -f .release-sums ]; then
  $PYTHON - <<'PY'
import hashlib
import os
import sys

shipped = {}
for line in open(".release-sums", encoding="utf-8"):
    digest, _, path = line.rstrip("\n").partition("  ")
    if path:
        shipped[path] = digest
said = []
for path, digest in sorted(shipped.items()):
    try:
        with open(path, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() != digest:
                said.append(f"    changed  {path}")
    except FileNotFoundError:
        said.append(f"    deleted  {path}")
    except OSError as error:
        said.append(f"    unreadable  {path} ({error.strerror})")
folders = sorted({path.split("/")[0] for path in shipped if "/" in path})
for folder in folders:
    for parent, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(parent, name).replace(os.sep, "/")
            if path not in shipped and not name.startswith(".") and not name.endswith(".pyc"):
                said.append(f"    added    {path}")
if said:
    print("WARNING: these changes are outside cs336_basics/ and will not be graded:", file=sys.stderr)
    print("\n".join(said), file=sys.stderr)
PY
fi

echo "==> writing $ARCHIVE"
$PYTHON - "$ARCHIVE" "$MAX_FILE_BYTES" "$MAX_TOTAL_BYTES" "$MAX_FILES" <<'PY'
import os
import sys
import zipfile

archive, max_file, max_total, max_files = sys.argv[1], *map(int, sys.argv[2:])
chosen, left_out = [], []
for folder, dirs, files in os.walk("cs336_basics"):
    dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
    for name in sorted(files):
        path = os.path.join(folder, name)
        if name.endswith(".pyc") or name.startswith("."):
            continue
        if os.path.islink(path):
            left_out.append((path, "a symbolic link; copy the file itself into cs336_basics/"))
        elif not name.endswith(".py"):
            left_out.append((path, "not a Python file, so it is not graded"))
        elif os.path.getsize(path) > max_file:
            left_out.append((path, f"{os.path.getsize(path):,} bytes, too large to submit (limit {max_file:,})"))
        else:
            chosen.append(path)
for path, why in left_out:
    print(f"WARNING: left out {path}: {why}", file=sys.stderr)
total = sum(os.path.getsize(p) for p in chosen)
if not chosen:
    sys.exit("make_submission.sh: cs336_basics/ holds no Python files; no zip written")
if len(chosen) > max_files or total > max_total:
    sys.exit(f"make_submission.sh: {len(chosen)} files, {total:,} bytes: over the grader's limit of {max_files} "
             f"files and {max_total:,} bytes; no zip written")
partial = archive + ".partial"
with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as zf:
    for path in chosen:
        zf.write(path, path.replace(os.sep, "/"))
os.replace(partial, archive)
print(f"wrote {archive}: {len(chosen)} files from cs336_basics/, {total:,} bytes before compression")
PY
status=$?
if [ "$status" -ne 0 ]; then
  exit "$status"
fi
echo "==> upload $ARCHIVE to Gradescope"

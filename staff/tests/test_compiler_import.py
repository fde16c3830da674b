"""torch._dynamo (1-2 s of CPU to import; a torch optimizer's first step imports it) is imported by a
grade's worker only where a graded problem trains (`Problem.trains` in tests/problems.py), and never
by the test process. Each test names the mistake it catches."""

from __future__ import annotations

import json
import subprocess
import sys

from staff.grading.selection import REPO_ROOT
from staff.sources.problem_files import hidden_test_files, public_test_files
from tests.problems import PROBLEMS

_PROBE = r"""
import json, sys
import pytest
code = pytest.main(["-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-x", *sys.argv[1:]])
print(json.dumps({"code": int(code), "imported": "torch._dynamo" in sys.modules}))
"""


def _imports_the_compiler(files: list[str]) -> bool:
    done = subprocess.run([sys.executable, "-c", _PROBE, *files], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=300)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["code"] == 0, done.stdout[-3000:]
    return found["imported"]


def test_no_problem_that_does_not_train_imports_the_compiler():
    # Mistake caught: a problem whose tests have the student's code step a torch optimizer left
    # `trains=False`, so that a grade of it imports torch._dynamo in the worker's child, inside a test's
    # time, in every child. Its public and hidden suites, with the reference, run in one process here
    # (the tests' side and the student's side both).
    quiet = [n for n, problem in PROBLEMS.items() if not problem.trains]
    files = [str(path.relative_to(REPO_ROOT)) for n in quiet
             for path in (*public_test_files(REPO_ROOT, n), *hidden_test_files(REPO_ROOT, n))]
    assert not _imports_the_compiler(files), f"a test of Problems {quiet} imported torch._dynamo"


def test_the_tests_that_train_do_not_import_the_compiler_in_the_test_process():
    # Mistake caught: Problem 10's tests stepping their AdamW with optimizer.step(), whose wrapper imports
    # torch._dynamo in the test process of every grade that includes Problem 10. (The public file alone:
    # the hidden file's adapter bodies, which run in the worker when graded, step optimizers here.)
    assert not _imports_the_compiler([str(path.relative_to(REPO_ROOT)) for path in public_test_files(REPO_ROOT, 10)])

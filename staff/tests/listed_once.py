"""The tests an unusable upload's grade lists, collected once for a batch of the staff tests.

A grade that cannot load its upload (a zip refused at intake, a symbolic link) runs no test: it lists
the tests it would have run, each failed with the reason, from the bundle's list where there is one,
else from a collection of the suites (a pytest run of about 9 CPU-seconds). The red team refuses eight
such uploads in one batch, each collecting the same suites with the same selection again. Here the
first collection serves the rest, keyed as the grader keys the bundle's list (`listing_key`: the
selection, the visibility and the suites' files): the grader itself takes a list under that key for
any of its grades, so each grade lists what it would have collected.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path

from staff.grading import selection
from tests.grading import HIDDEN_VISIBILITY, GradedTest


@contextlib.contextmanager
def listed_once() -> Iterator[dict[str, list[GradedTest]]]:
    """While the block runs, `staff.grading.selection.collect_only` collects each selection once (a grade of a
    batch waits for another's collection of the same selection rather than making its own); the
    collections made, by key."""
    real, made, lock = selection.collect_only, {}, threading.Lock()

    def collect(workspace: Path, hidden: bool = False, problems: set[int] | None = None, gpu: bool | None = None,
                hidden_visibility: str = HIDDEN_VISIBILITY, complete: bool = False) -> list[GradedTest]:
        wanted = selection.listing_key(selection.REPO_ROOT, hidden, problems, gpu, hidden_visibility)
        key = json.dumps([wanted, complete], sort_keys=True)
        with lock:
            if key not in made:
                made[key] = real(workspace, hidden, problems, gpu, hidden_visibility, complete)
            return copy.deepcopy(made[key])

    selection.collect_only = collect
    try:
        yield made
    finally:
        selection.collect_only = real

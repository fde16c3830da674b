"""Whether this process has been told to stop (SIGTERM, or SIGINT from Ctrl-C), for the threads that
grade a batch: a grade that ends as the process is stopped may have been cut short by the same
signal (a scheduler's `scancel` signals every process of the job, the grader's test runs and
workers too), so its results are not written and a rerun grades that submission again."""

from __future__ import annotations

import threading

REQUESTED = threading.Event()
GRACE_S = 0.2  # how long a finished grade waits for the main thread to take a stop signal that came with it


def stop_requested(grace_s: float = GRACE_S) -> bool:
    """Whether a stop was asked for, now or within `grace_s` (the main thread handles signals, and a
    grading thread may see its test run killed a moment before the main thread runs the handler)."""
    return REQUESTED.wait(grace_s)

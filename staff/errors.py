"""The one base of the errors a staff command reports to the person who ran it: bad input, a refused
setting, a grade that must not run. `staff.cli.main` catches it once, prints its message after the
command's name and exits 2; anything else is a bug and keeps its traceback. The sandbox's own errors
(frames, replies, the CUDA preflight) are not among them: they travel between the grader and the
worker, and the worker's copies of those modules import nothing of the grader's."""

from __future__ import annotations


class StaffError(Exception):
    """What went wrong, in a sentence for the person at the command line: what was wrong, what was
    expected."""

"""How a grade ended, as a value: the grader, results.json and the gradebook pass `Outcome`s, never the
sentences built from them.

Each member's value is the short stable string results.json's top-level extra_data holds as "outcome"
(and, for a test that never ran, the test's extra_data holds as "reason"). Each member also carries
the student-facing text of its summary and of a test it kept from running, built from the grade's
details (the facts of the outcome, which extra_data holds beside it):

- graded: none;
- not_loaded: "load_error", why the package could not be imported or laid out;
- time_limit: "time_limit_s", the seconds the whole test run was allowed;
- process_ended: "exit_code", how the test process ended before every test finished;
- out_of_memory: "what" ran out and "memory_limit_bytes" (the container's limit, or None when unknown);
- grader_error: "error", what the grader raised (its summary is for the staff);
- cuda_unavailable: "error", what the driver said when the GPU grade's preflight could not start CUDA
  in the confined worker (staff/sandbox/cuda_preflight.py).
- killed: "signal", the name of the signal that ended the grader's test process from outside (the
  submission's code runs in the sandbox's worker, which cannot reach that process).
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from staff.sandbox.memory import RECOMMENDED_MEMORY_BYTES

Details = dict[str, object]
NEVER_FINISHED = "FAILED: this test never finished"
_NOT_LOADED = "Your submission could not be loaded, so no test ran:\n"


def _stopped(why: str) -> str:
    return f"The test run stopped early: {why} stopped the run. Tests that did not finish score 0."


def _never_finished(why: str) -> str:
    return f"{NEVER_FINISHED}: {why} stopped the run."


def _time_limit(details: Details) -> str:
    return f"the time limit of {details['time_limit_s']:g} s"


def _process_ended(details: Details) -> str:
    return f"the test process ended (exit code {details['exit_code']})"


def _out_of_memory(details: Details) -> str:
    limit = details.get("memory_limit_bytes")
    now = "" if limit is None else f"; it is {limit / 2**20:.0f} MiB now"
    return (f"This submission was not graded: {details['what']}. The grading container is too small for the grader "
            f"and the student's code together; this is not your fault, and no test was counted. Course staff: raise "
            f"the memory in the assignment's Autograder settings (at least {RECOMMENDED_MEMORY_BYTES / 2**30:g} GB"
            f"{now}) and regrade.")


def _killed(details: Details) -> str:
    return (f"This submission was not graded: the grader's test process was ended from outside by {details['signal']} "
            "(by the machine, another program or a person; your code runs in a sandboxed process of its own, which "
            "cannot reach it). This is not your fault, and no test was counted. Course staff: `staff grade --batch` "
            "grades it again on its next run.")


def _cuda_unavailable(details: Details) -> str:
    return ("The GPU part of this submission was not graded: the grading machine's GPU could not be started inside "
            "the grader's sandbox, before any test ran. This is not your fault, and no test was counted.\n\n"
            f"Course staff: the driver said: {details['error']}\n"
            "What to try: `nvidia-smi` (is the GPU there and idle?); `staff gpu-check` on the GPU machine (the cuda "
            "tests unconfined, then this grade behind the sandbox); if CUDA starts unconfined but not here, grade "
            "again with one protection off at a time (--no-seccomp, --no-namespaces, --no-landlock, "
            "--no-separate-user, --no-tmpfs) and report which one lets CUDA start. `staff grade --batch` grades this "
            "submission again on its next run.")


class Outcome(enum.Enum):
    """How a grade ended. `summary` and `never_ran` give the student-facing text for the grade's details;
    `grader_failure` says the grade says nothing of the submission (no test was counted)."""

    def __new__(cls, value: str, summary: Callable[[Details], str],
                never_ran: Callable[[Details], str] | None = None, grader_failure: bool = False) -> Outcome:
        member = object.__new__(cls)
        member._value_ = value
        member._summary, member._never_ran, member.grader_failure = summary, never_ran, grader_failure
        return member

    GRADED = "graded", lambda details: ""
    NOT_LOADED = ("not_loaded", lambda details: _NOT_LOADED + str(details["load_error"]),
                  lambda details: _NOT_LOADED + str(details["load_error"]))
    TIME_LIMIT = ("time_limit", lambda details: _stopped(_time_limit(details)),
                  lambda details: _never_finished(_time_limit(details)))
    PROCESS_ENDED = ("process_ended", lambda details: _stopped(_process_ended(details)),
                     lambda details: _never_finished(_process_ended(details)))
    OUT_OF_MEMORY = "out_of_memory", _out_of_memory, None, True
    GRADER_ERROR = "grader_error", lambda details: f"the grader failed: {details['error']}", None, True
    CUDA_UNAVAILABLE = "cuda_unavailable", _cuda_unavailable, None, True
    KILLED = "killed", _killed, None, True

    def summary(self, details: Details) -> str:
        """The text above the points table (for a grader failure, the staff-facing reason)."""
        return self._summary(details)

    def never_ran(self, details: Details) -> str:
        """What a test this outcome kept from running says.

        Raises:
            ValueError: this outcome keeps no test from running (graded, or a grade with no tests).
        """
        if self._never_ran is None:
            raise ValueError(f"a {self.value} grade keeps no test from running")
        return self._never_ran(details)

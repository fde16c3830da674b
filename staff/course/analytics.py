"""How each test fares across a batch: its failure rate, its failure messages grouped, and whether it
looks wrong (a suspect test), so a broken test shows up before students report it.

A test is suspect when
- it fails most of the submissions that pass every other test of its problem (at least
  `MIN_SUBMISSIONS` of them): the rest of the problem says the code is right, this test disagrees;
- it fails every submission that ran it (at least `MIN_SUBMISSIONS`) with one and the same
  message: code written by different people does not fail in one identical way, a grader does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

MIN_SUBMISSIONS = 2  # fewer cannot tell a wrong test from one wrong submission
MESSAGE_CHARS = 160


@dataclass(frozen=True)
class Result:
    """One test's result in one submission's grade."""

    nodeid: str
    name: str
    problem: int
    passed: bool
    message: str  # its failure message (`failure_message`; "" when it passed)


STATUS_LINES = {"FAILED", "PASSED", "ERROR"}


def failure_message(output: str) -> str:
    """The message line of a failed test's output (tests/failure_output.py: a status line, the test's
    frames indented, then "ExceptionType: message"), at most MESSAGE_CHARS; its first line otherwise."""
    lines = [line for line in str(output).splitlines() if line.strip()]
    for line in lines:
        if line.strip() not in STATUS_LINES and not line[:1].isspace() and not line.startswith("Traceback ("):
            break
    else:
        line = lines[0].strip() if lines else ""
    line = line.strip()
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 3] + "..."


@dataclass
class Tally:
    nodeid: str
    name: str
    problem: int
    ran: int = 0  # submissions whose grade ran it
    failed: int = 0
    messages: Counter = field(default_factory=Counter)  # failure message -> submissions
    suspect: str = ""  # why the test looks wrong; "" when it does not

    @property
    def failure_rate(self) -> float:
        return self.failed / self.ran if self.ran else 0.0


def tally_tests(graded: list[list[Result]]) -> list[Tally]:
    """Per test, over the grades in `graded` (each a submission's results), sorted by problem and
    failure rate (highest first)."""
    stats: dict[str, Tally] = {}
    for results in graded:
        for result in results:
            entry = stats.setdefault(result.nodeid, Tally(result.nodeid, result.name, result.problem))
            entry.ran += 1
            if not result.passed:
                entry.failed += 1
                entry.messages[result.message] += 1
    for entry in stats.values():
        entry.suspect = _suspect(entry, graded)
    return sorted(stats.values(), key=lambda s: (s.problem, -s.failure_rate, s.nodeid))


def _suspect(entry: Tally, graded: list[list[Result]]) -> str:
    if entry.ran >= MIN_SUBMISSIONS and entry.failed == entry.ran and len(entry.messages) == 1:
        message = next(iter(entry.messages))
        return f"fails all {entry.ran} submissions with one message: {message or '(no message)'}"
    otherwise_right = [results for results in graded
                       if any(r.nodeid == entry.nodeid for r in results)
                       and all(r.passed for r in results if r.problem == entry.problem and r.nodeid != entry.nodeid)]
    failing = sum(not r.passed for results in otherwise_right for r in results if r.nodeid == entry.nodeid)
    if len(otherwise_right) >= MIN_SUBMISSIONS and failing * 2 > len(otherwise_right):
        return (f"fails {failing} of the {len(otherwise_right)} submissions that pass every other test of "
                f"problem {entry.problem}")
    return ""


def top_messages(entry: Tally, count: int = 5) -> list[tuple[str, int]]:
    """The most common failure messages of a test, with how many submissions got each (ties by text)."""
    return sorted(entry.messages.items(), key=lambda item: (-item[1], item[0]))[:count]

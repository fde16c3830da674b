"""Which recorded grades a batch must make again, and why.

A grade is kept only while everything that made it is what a grade made now would use: the suite
(staff.grading.provenance: the tests, adapters and hidden suite, by content), the settings (the problems,
the GPU part, the limits) and the submission (its graded files, by content). A grade of some
problems only (`--problems`) records that in its settings, so a whole run grades it again. A grade
that said nothing of the submission (the grader's own failure) is always made again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from staff.grading import provenance
from staff.grading.outcomes import Outcome
from staff.sandbox.settings import Settings

NOT_GRADED = "no grade yet"
# Settings a grade records but that decide no score, so a difference in them leaves a grade current:
# torch's threads follow the machine (a Slurm task gives each submission its node's share), and
# allowing a grade that leaves the grader's files open is a permission, not a limit.
NO_SCORE = frozenset({"threads", "allow_open_grader"})


def scored(settings: dict) -> dict:
    """The settings that can change a score (all but NO_SCORE); a setting a grade made before it existed
    does not record counts as its default (what that grade used)."""
    return {name: value for name, value in {**provenance.settings_record(Settings()), **settings}.items()
            if name not in NO_SCORE}


@dataclass(frozen=True)
class Current:
    """What a grade made now records of its suite and settings (the submission is hashed one by one)."""

    suite: dict
    settings: dict

    @classmethod
    def of(cls, settings) -> Current:
        """For a grade with `settings` (a `Settings`) from this tree."""
        from staff.grading.selection import HIDDEN_SUITE

        hidden = settings.hidden and HIDDEN_SUITE.is_dir() and not settings.gpu
        return cls(provenance.suite(hidden), provenance.settings_record(settings))


def _shown(name: str, value: object) -> str:
    if value is None:
        return "all" if name == "problems" else "default"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def settings_change(old: dict, new: dict) -> str:
    """The settings that differ, as "problems 2, 9 -> all; test_timeout_s 60 -> 120"."""
    names = sorted(set(old) | set(new))
    return "; ".join(f"{name} {_shown(name, old.get(name))} -> {_shown(name, new.get(name))}"
                     for name in names if old.get(name) != new.get(name))


def suite_change(old: dict, new: dict) -> str:
    """The files a suite change touched, as "tests/test_09_data.py, adapters/data.py and 3 more"."""
    files = provenance.changed_files(old, new)
    if not files:
        return "its hash (no file list was recorded)"
    shown = ", ".join(files[:3])
    return shown + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def why_regrade(document: dict | None, current: Current | None, upload: Path) -> str | None:
    """Why the grade `document` (a results document, None where there is none) of the submission at
    `upload` must be made again; None to keep it. With no `current` (a caller that grades with
    settings of its own, like the red team), only a missing grade or the grader's failure count."""
    if document is None:
        return NOT_GRADED
    if Outcome(document["extra_data"]["outcome"]).grader_failure:
        return "not graded last time (the grader's own failure)"
    if current is None:
        return None
    recorded = document["extra_data"].get("provenance")
    if not isinstance(recorded, dict):
        return "graded by a grader that recorded no provenance"
    suite = recorded.get("suite") if isinstance(recorded.get("suite"), dict) else {}
    if suite.get("sha256") != current.suite["sha256"]:
        return f"the suite changed in {suite_change(suite, current.suite)}"
    then, now = scored(recorded.get("settings") or {}), scored(current.settings)
    if then != now:
        return f"the settings changed: {settings_change(then, now)}"
    submission = recorded.get("submission") if isinstance(recorded.get("submission"), dict) else {}
    if submission.get("sha256") != provenance.submission_sha256(upload)["sha256"]:
        return "the submission changed"
    return None


def reason_lines(reasons: dict[str, str], verb: str) -> list[str]:
    """One line per reason, most common first: "12 regraded: the suite changed in tests/test_09_data.py"."""
    counts = Counter(reasons.values())
    return [f"{count} {verb}: {reason}" for reason, count in sorted(counts.items(), key=lambda i: (-i[1], i[0]))]

"""Grading one submission: which tests run (selection.py, collected.py), the test process behind the
sandbox (suite_run.py; in a batch, forked from warm templates: warm_start.py), how
a grade ended (outcomes.py), what it shows (scrub.py, console.py), its results.json (results.py) and
what graded it (provenance.py); grade.py puts them together.

Imports the sandbox, the intake, the tree's sources and the plumbing at staff's root; the course, the
Gradescope bundle, validate, the red team and the commands import it. It never imports torch."""

"""A course over a term: a batch of submissions graded in parallel and resumably (batch.py, over the
folders of folder.py), its gradebook (gradebook.py), which recorded grades are stale (stale.py), what
moved between two grades and why (diff.py), how each test fares across a batch (analytics.py), the
course report (report.py), and the batch in shards and on Slurm (cluster/).

Imports the grader (staff.grading), the sandbox and the plumbing; only the commands, the red team
and the tests import it."""

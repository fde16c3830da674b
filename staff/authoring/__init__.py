"""Authoring the assignment: `staff check` (check.py: every consistency check that needs no grading),
the facts the pages restate (stated.py), their links (links.py), the handout's figures (figures.py)
and a new problem's scaffold (new_problem.py).

Imports the tree's sources, the release and validate; only the commands import it."""

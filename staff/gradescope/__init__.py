"""Gradescope: the autograder that runs inside its container (autograder.py, with setup.sh and
run_autograder in autograder_files/), the bundle `staff bundle` builds from this tree (bundle.py, with
the versions it pins: pins.py), and an emulation of the container to try it locally (container.py).

Imports the grader, the release (what ships) and the sandbox; only the commands and the tests import it.
The autograder itself imports no more than the grader needs, since the bundle holds only that."""

"""This tree's problems as files: where each problem's files live (problem_files.py), the solution
markers in the reference (markers.py) and the handout section each solution block belongs to
(sections.py).

Imports only staff.errors and the sandbox's layout; everything that reads the tree imports it."""

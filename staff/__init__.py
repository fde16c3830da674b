"""Staff-only tools, never shipped to students. Nothing outside staff/ imports them.

Packages by role, each owning what its docstring says. They import downwards only: a unit (a package,
or one of the few modules at this root) imports units of its own layer or a lower one, never a higher
one, and no two units or files import each other in a circle (staff/tests/test_import_layers.py checks
every import, including those inside functions).
"""

# Lowest first. A unit may import its own layer's units and those below.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "atomic", "stopping", "bytecode"),  # plumbing every part uses
    ("sandbox",),  # the worker that runs student code, and its protections
    ("sources", "intake"),  # this tree's problems, markers and sections; an upload taken in
    ("grading",),  # one submission graded: selection, the test process, outcomes, results.json, provenance
    ("samples", "course", "release"),  # reference submissions; a batch and a term; the student release
    ("gradescope", "validate", "redteam", "bench"),  # the bundle; the suites validated; the red team; timings
    ("authoring", "gpu"),  # `staff check` and the pages' facts; the GPU part, as a TA meets it
    ("commands", "cli"),  # the command line: the only place that reads arguments and returns exit codes
)

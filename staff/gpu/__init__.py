"""The GPU part, as a TA meets it on an H100 or H200: `staff gpu-check` (check.py runs steps.py; its stand-in for
machines without a GPU, dry_run.py), each protection of a GPU grade's worker tried with CUDA
(protections.py) and `staff gpu-report` (report.py). It may import the grader (staff.grading.grade), the
sandbox, validate and the red team; nothing but staff/commands imports it."""

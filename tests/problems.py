"""The problem catalogue: every problem of the assignment, declared once.

Each entry gives the problem's number, its title (the points tables' first column), its handout page,
the points the staff's hidden tests add when they grade (stated on each handout page, and checked
against the hidden suite by `staff check`), the cs336_basics module its functions live in, and whether
its tests step a torch optimizer on the student's side (`trains`). The
points plugin (tests/grading.py), the staff's grader, checks and scaffold all read it from here.
"""

from __future__ import annotations

from typing import NamedTuple


class Problem(NamedTuple):
    title: str
    handout: str
    hidden_points: int  # what the staff's hidden tests add when they grade (stated on each handout page)
    module: str  # the cs336_basics module the problem's functions live in
    # Whether its tests step a torch optimizer on the student's side: the grader's worker then imports
    # torch._dynamo once, before any test, which the first step of a torch optimizer imports (1-2 s of CPU)
    trains: bool = False


PROBLEMS: dict[int, Problem] = {
    1: Problem("Dtype memory", "handout/01_dtype_memory.md", 12, "dtype_memory"),
    2: Problem("Strides and views", "handout/02_strides.md", 12, "strides"),
    3: Problem("einops", "handout/03_einops.md", 8, "einops_ops"),
    4: Problem("FLOPs and MFU", "handout/04_flops.md", 8, "flops"),
    5: Problem("Backward by hand", "handout/05_backward.md", 6, "backward"),
    6: Problem("Initialization", "handout/06_init.md", 8, "init"),
    7: Problem("The model", "handout/07_model.md", 7, "model"),
    8: Problem("AdaGrad", "handout/08_adagrad.md", 12, "optimizer"),
    9: Problem("Memmap data loader", "handout/09_data.md", 14, "data"),
    10: Problem("Checkpoints and seeds", "handout/10_checkpoint.md", 12, "checkpoint", trains=True),
    11: Problem("Train it", "handout/11_train.md", 8, "train", trains=True),
}
# The first column of every points table (this plugin's, `staff grade`'s, a batch's summary): wide
# enough for the longest "N. Title", so a long title added next term keeps the columns aligned.
TITLE_WIDTH = max(26, *(len(f"{n}. {p.title}") + 2 for n, p in PROBLEMS.items()))

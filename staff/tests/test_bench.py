"""`staff bench`: its timing arithmetic, its table, the page it updates and its baselines. The
figures themselves are machine-dependent and are never asserted here (no wall-clock limits)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch

from staff.bench import measure
from staff.bench.kernels import lecture_get_batch
from staff.bench.measure import Row, Timing, ratio_row, repeat_command, repeat_pair
from staff.bench.run import README_END, README_START, replace_readme_table
from staff.cli import main


def test_median_and_spread_of_the_repeats():
    timing = Timing((3.0, 1.0, 2.0, 10.0))
    assert timing.median == 2.5  # the middle two of an even count, not the mean (4.0) or the first
    assert timing.describe() == "2.50 s (1.00-10.00 s)"
    assert Timing((0.0021, 0.002, 0.0025)).describe() == "2.1 ms (2-2.5 ms)"


def test_a_pair_is_timed_in_alternation_and_not_during_the_warm_up(monkeypatch):
    # Timed calls in order: ours, baseline, ours, baseline, taking 0.5, 2, 1 and 3 s.
    clock = iter([10.0, 10.5, 20.0, 22.0, 30.0, 31.0, 40.0, 43.0])
    monkeypatch.setattr(measure.time, "perf_counter", lambda: next(clock))
    calls = []
    ours, baseline = repeat_pair(lambda: calls.append("ours"), lambda: calls.append("base"), repeats=2, warmup=1)
    assert calls == ["ours", "base"] * 3
    assert ours.seconds == (0.5, 1.0) and baseline.seconds == (2.0, 3.0)


def test_a_failing_command_has_no_time():
    with pytest.raises(RuntimeError, match="exited with 3"):
        repeat_command([sys.executable, "-c", "import sys; sys.exit(3)"], repeats=1)


def test_a_command_timed_for_its_error_must_end_in_that_error():
    # Mistake this catches: the argument-error figure timing a command that did not stop at the error.
    assert repeat_command([sys.executable, "-c", "import sys; sys.exit(2)"], repeats=1, exit_code=2).seconds
    with pytest.raises(RuntimeError, match="exited with 0"):
        repeat_command([sys.executable, "-c", "pass"], repeats=1, exit_code=2)


@pytest.mark.parametrize(("ours", "theirs", "met"), [(1.0, 1.0, True), (1.19, 1.0, True), (1.3, 1.0, False),
                                                     (0.5, 1.0, True)])
def test_a_ratio_target_is_the_time_over_the_baseline(ours, theirs, met):
    row = ratio_row("g", "c", Timing((ours,)), Timing((theirs,)), "base", at_most=1.2)
    assert row.met is met
    assert row.figure == f"{ours / theirs:.3g}× the time"
    assert ratio_row("g", "c", Timing((ours,)), Timing((theirs,)), "base", at_most=None).met is None


def test_the_table_marks_a_missed_target():
    rows = [Row("a", "x", Timing((1.0,)), None, "", "1 s", "< 2 s", True),
            Row("b", "y", Timing((3.0,)), Timing((1.0,)), "base", "3× the time", "≤ 1.2×", False)]
    table = measure.markdown(rows, "a test machine")
    assert "a test machine" in table
    assert "| a | x | 1.00 s (1.00-1.00 s) | — | — | 1 s | < 2 s | yes |" in table
    assert "| b | y |" in table and table.rstrip().endswith("| **no** |")


def test_the_readme_gets_the_table_between_its_markers_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold table\n{README_END}\noutro\n")
    replace_readme_table(readme, "| new |\n")
    assert readme.read_text() == f"intro\n{README_START}\n| new |\n{README_END}\noutro\n"
    readme.write_text("no markers here\n")
    with pytest.raises(ValueError, match="bench:start"):
        replace_readme_table(readme, "| new |\n")
    assert readme.read_text() == "no markers here\n"


def test_the_lecture_baseline_draws_the_windows_get_batch_would():
    data = np.arange(1000, dtype=np.uint16)
    x, y = lecture_get_batch(data, 8, 16, torch.Generator().manual_seed(0))
    starts = torch.randint(1000 - 16, (8,), generator=torch.Generator().manual_seed(0))
    assert x.dtype == torch.int64
    assert torch.equal(x, starts[:, None] + torch.arange(16))
    assert torch.equal(y, x + 1)


def test_cli_refuses_bad_arguments_before_measuring(tmp_path, capsys):
    out = tmp_path / "bench.md"
    assert main(["bench", "--repeats", "0", "--out", str(out)]) == 2
    assert "--repeats" in capsys.readouterr().err and not out.exists()
    with pytest.raises(SystemExit):
        main(["bench", "--only", "everything"])


def test_the_memory_row_reads_the_grades_peak_against_one_import_torch(tmp_path):
    from staff.bench.waits import _memory_row

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"extra_data": {"memory_bytes": {"test process peak RSS": 1500 << 20}}}))
    row = _memory_row(results, Timing((30.0,)))
    assert row.figure.startswith("1500 MiB, ") and "× the floor of" in row.figure
    floor = float(row.figure.split("floor of ")[1].split()[0])
    assert 100 < floor < 1500  # one `import torch`, measured: hundreds of MiB


def test_the_page_that_holds_the_bench_markers_is_the_default_for_readme():
    # Mistake this catches: the measurements moved to another page and `staff bench --readme` still
    # defaults to the old one, so it refuses (no markers there) or, worse, writes the table where no one reads it.
    import argparse

    from staff.bench.run import BENCH_PAGE
    from staff.commands import bench as bench_command
    from staff.grading.grade import REPO_ROOT

    text = (REPO_ROOT / BENCH_PAGE).read_text(encoding="utf-8")
    assert text.count(README_START) == 1 and text.count(README_END) == 1
    parser = argparse.ArgumentParser()
    bench_command.register(parser.add_subparsers())
    assert parser.parse_args(["bench", "--readme"]).readme == BENCH_PAGE

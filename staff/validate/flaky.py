"""Flakiness: the graded suites on the reference, many times, in shuffled orders with other seeds.

Each run shuffles the order of the tests (`staff.validate.shuffle`), moves every test's seed
(`--seed-offset`) and draws new hypothesis examples (`--hypothesis-seed`, profile "shuffled"): the
seeds the specification leaves free. A correct implementation must pass every run. The statistical
tests' chance of failing a correct implementation in one run is computed by `false_failure_rates`.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from tqdm import tqdm

from staff.samples import REPO_ROOT


def run_once(index: int, timeout_s: float = 1800) -> tuple[int, list[str], float]:
    """(index, the tests that failed, seconds) for one shuffled run of both suites on the reference."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests", "staff/hidden", "-q", "--tb=line", "-p", "no:cacheprovider",
         "-p", "staff.validate.shuffle", f"--shuffle-seed={index}", f"--seed-offset={1_000_003 * index}",
         "--hypothesis-profile=shuffled", f"--hypothesis-seed={index}"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    failed = [line.split(" - ")[0].removeprefix("FAILED ") for line in done.stdout.splitlines()
              if line.startswith(("FAILED ", "ERROR "))]
    if done.returncode not in (0, 1):
        failed.append(f"pytest exited with {done.returncode}: {done.stdout[-300:]}")
    return index, failed, time.monotonic() - started


def tail(k: float) -> float:
    """P(|Z| > k) for a standard normal Z."""
    return math.erfc(k / math.sqrt(2))


def false_failure_rates() -> list[tuple[str, str, float]]:
    """(test, its bounds, the chance that a correct implementation fails it in one run), for every
    statistical test: each bound's normal tail, added over the test's bounds (a union bound)."""
    from tests.test_06_init import SIGMAS
    from tests.test_09_data import START_SIGMAS

    five_and_a_half, starts = tail(SIGMAS), tail(START_SIGMAS)
    rows = [
        ("test_normal_init_has_std_one_over_sqrt_d_in", "mean, std, 3 shares at 5.5 s.e.", 5 * five_and_a_half),
        ("test_trunc_normal_init_is_cut_at_three_standard_deviations",
         "max/std at 5.5 s.e. of the std and the largest draw's gap, mean, 3 shares", 6 * five_and_a_half),
        ("test_trunc_normal_init_has_the_truncated_std", "mean and std at 5.5 s.e.", 2 * five_and_a_half),
        ("test_get_batch_starts_are_uniform_over_every_valid_start", f"10 start counts at {START_SIGMAS} s.e.",
         10 * starts),
        ("hidden: test_normal_init_of_a_single_input", "mean and std at 5.5 s.e.", 2 * five_and_a_half),
        ("hidden: test_trunc_normal_init_of_a_single_input", "max/std (2 bounds), mean, 3 shares at 5.5 s.e.",
         6 * five_and_a_half),
        ("hidden: test_trunc_normal_init_at_a_moderate_width", "max/std (2 bounds), mean, 3 shares at 5.5 s.e.",
         6 * five_and_a_half),
        ("hidden: test_trunc_normal_init_redraws_its_tails_rather_than_folding_or_clamping_them",
         "2 shares at 5.5 s.e.", 2 * five_and_a_half),
        ("hidden: test_get_batch_draws_the_first_and_the_last_valid_start", "both of 2 starts in 256 draws",
         2 * 0.5**256),
    ]
    # Problem 11's loss bound (1e-3) is not a sampling bound: a run is a function of its config, so a
    # correct implementation passes or fails it every time. What varies between correct ones is the
    # initialization (how trunc_normal_init draws) and so, in effect, the seed. Measured on the
    # reference over seeds 0-199 of each test's config: worst mean of the last 10 losses 1.4e-4 (public,
    # bfloat16, 40 steps), 1.7e-5 (public, float32), 4.9e-5 and 7.6e-6 (hidden): no seed within 7x of
    # the bound. The trained model's error on 64 probe windows, same bound: worst 1.1e-5 over seeds
    # 0-199 (public), 6.1e-6 and 2.2e-5 over seeds 0-99 (hidden). Listed with chance 0: no draw in the
    # test run can change its outcome.
    rows.append(("test_the_loss_falls, test_matmuls_run_in_the_chosen_precision (Problem 11)",
                 "loss below 1e-3; 0 of 800 seeds above 1.4e-4", 0.0))
    return rows


def none_flaky(runs: int, jobs: int) -> bool:
    """Run the reference's suites `runs` times, shuffled and reseeded, `jobs` at once, printing what failed;
    whether every run passed every test."""
    started = time.monotonic()
    failures: dict[int, list[str]] = {}
    seconds = []
    with ThreadPoolExecutor(max_workers=jobs) as pool, tqdm(total=runs, unit="run", file=sys.stderr) as bar:
        for future in as_completed([pool.submit(run_once, i) for i in range(1, runs + 1)]):
            index, failed, took = future.result()
            seconds.append(took)
            if failed:
                failures[index] = failed
            bar.update(1)
    print(f"{runs - len(failures)} of {runs} shuffled runs passed every test "
          f"({time.monotonic() - started:.0f} s, {sum(seconds) / len(seconds):.0f} s a run)")
    for index, failed in sorted(failures.items()):
        print(f"run {index} (shuffle seed {index}): {', '.join(failed[:5])}")
    print("\nchance that a correct implementation fails a statistical test in one run (union bound):")
    for test, bounds, chance in false_failure_rates():
        print(f"  {chance:9.1e}  {test} ({bounds})")
    return not failures

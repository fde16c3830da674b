"""Test set-up shared by every suite: the points plugin and per-test seeding (the one place seeds are set)."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from adapters._route import current_route
from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES, PointsPlugin, check_imports_resolve_inside

TESTS_ROOT = Path(__file__).resolve().parent
HIDDEN_ROOT = TESTS_ROOT.parent / "staff" / "hidden"  # present only where the staff grade


def pytest_addoption(parser: pytest.Parser) -> None:
    """The suites' options. The hidden suites' conftest registers these hooks too, so that one of
    their files runs alone; run together, the second call finds the options there and adds nothing."""
    try:
        _add_options(parser)
    except ValueError:  # pytest's "option names ... already added": the other conftest added them
        pass


def _add_options(parser: pytest.Parser) -> None:
    parser.addoption(
        "--grading-report",
        metavar="PATH",
        default=None,
        help="write one JSON line per graded test and per result to PATH (used by `staff grade`)",
    )
    parser.addoption(
        "--seed-offset",
        type=int,
        default=0,
        help="add this to every test's seed (the staff's flakiness runs; the default 0 is what grading uses)",
    )
    parser.addoption(
        "--hidden-visibility",
        choices=VISIBILITIES,
        default=HIDDEN_VISIBILITY,
        help="when students may see a hidden test's result on Gradescope (default: %(default)s)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin("points"):  # configured already, by the other conftest
        return
    here = ("cs336_basics", "adapters") if current_route().runs_here else ("adapters",)
    check_imports_resolve_inside(TESTS_ROOT.parent, here)
    report = config.getoption("--grading-report")
    if report is not None:
        Path(report).write_text("")
    plugin = PointsPlugin(TESTS_ROOT, HIDDEN_ROOT if HIDDEN_ROOT.is_dir() else None, Path(report) if report else None,
                          config.getoption("--hidden-visibility"))
    config.pluginmanager.register(plugin, "points")


@pytest.fixture(autouse=True)
def seed_everything(request: pytest.FixtureRequest) -> int:
    """Seed torch, numpy and random from the test's id, so each test sees the same numbers every
    run whatever ran before it, and tell the route, so student code run elsewhere is seeded too.
    Returns the seed."""
    seed = (zlib.crc32(request.node.nodeid.encode()) + request.config.getoption("--seed-offset")) % 2**32
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    current_route().begin_test(request.node.nodeid, seed)
    return seed

"""Test set-up shared by every suite: the points plugin and per-test seeding (the one place seeds are set)."""

from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.grading import PointsPlugin, check_imports_resolve_inside

TESTS_ROOT = Path(__file__).resolve().parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--grading-report",
        metavar="PATH",
        default=None,
        help="write one JSON line per graded test and per result to PATH (used by `staff grade`)",
    )


def pytest_configure(config: pytest.Config) -> None:
    check_imports_resolve_inside(TESTS_ROOT.parent)
    report = config.getoption("--grading-report")
    if report is not None:
        Path(report).write_text("")
    config.pluginmanager.register(PointsPlugin(TESTS_ROOT, Path(report) if report else None), "points")


@pytest.fixture(autouse=True)
def seed_everything(request: pytest.FixtureRequest) -> int:
    """Seed torch, numpy and random from the test's id, so each test sees the same numbers every
    run whatever ran before it. Returns the seed."""
    seed = zlib.crc32(request.node.nodeid.encode())
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    return seed

"""pytest plugin (`-p staff.validate.shuffle --shuffle-seed N`): run the tests in a shuffled order.

Used by `staff validate --flaky`: a test that passes only after another one ran first, or only in
the order the files are written, fails under some order.
"""

from __future__ import annotations

import random

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--shuffle-seed", type=int, default=None, help="shuffle the collected tests with this seed")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seed = config.getoption("--shuffle-seed")
    if seed is not None:
        random.Random(seed).shuffle(items)

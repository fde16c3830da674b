"""The hidden suites: the public suites' fixtures (seeding, the worker's tmp_path) and hypothesis settings.

Property tests run derandomized (the same examples every run, for every submission), with no
example database (nothing is remembered between runs), no per-example deadline (a loaded machine
must not fail correct code) and no "explain" phase (it would print lines of the hidden tests).
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

# The public suites' hooks and fixture, registered by being imported here: a hidden file then runs
# alone (`uv run pytest staff/hidden/test_hidden_02_strides.py`); run beside tests/, they do nothing twice.
from tests.conftest import pytest_addoption, pytest_configure, seed_everything  # noqa: F401

settings.register_profile(
    "grading",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=100,
    print_blob=False,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)
# For the staff's flakiness runs (`staff validate --flaky`): new examples on every run, seeded by
# --hypothesis-seed, chosen with --hypothesis-profile=shuffled.
settings.register_profile("shuffled", settings.get_profile("grading"), derandomize=False)
settings.load_profile("grading")

"""The hidden suites: the public suites' fixtures (seeding, the worker's tmp_path) and hypothesis settings.

Property tests run derandomized (the same examples every run, for every submission), with no
example database (nothing is remembered between runs), no per-example deadline (a loaded machine
must not fail correct code) and no "explain" phase (it would print lines of the hidden tests).
`--property-examples N` (a grade's `property_examples` setting) gives each property test that does not
set its own number N examples instead of the profile's.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, settings

# The public suites' hooks and fixture, registered by being imported here: a hidden file then runs
# alone (`uv run pytest staff/hidden/test_hidden_02_strides.py`); run beside tests/, they do nothing twice.
from tests.conftest import pytest_addoption as add_public_options
from tests.conftest import pytest_configure as configure_public
from tests.conftest import seed_everything  # noqa: F401

EXAMPLES = 100  # each property test's examples, unless the test or --property-examples says otherwise

settings.register_profile(
    "grading",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=EXAMPLES,
    print_blob=False,
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)
# For the staff's flakiness runs (`staff validate --flaky`): new examples on every run, seeded by
# --hypothesis-seed, chosen with --hypothesis-profile=shuffled.
settings.register_profile("shuffled", settings.get_profile("grading"), derandomize=False)
settings.load_profile("grading")


def _examples(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"expected at least 1 example, got {value}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    add_public_options(parser)
    parser.addoption("--property-examples", type=_examples, default=None, metavar="N",
                     help=f"examples for each property test that does not set its own number (default: {EXAMPLES})")


@pytest.hookimpl(trylast=True)  # after hypothesis's own plugin has loaded a --hypothesis-profile
def pytest_configure(config: pytest.Config) -> None:
    configure_public(config)
    examples = config.getoption("--property-examples")
    if examples is not None:
        settings.register_profile("examples", settings.default, max_examples=examples)
        settings.load_profile("examples")

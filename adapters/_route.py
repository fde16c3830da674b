"""Where an adapter's body runs: here (students' `uv run pytest`), or in a worker process (grading).

Every `run_*` adapter is wrapped with `@routed`. By default the body runs in this process on
copies of its arguments made by `adapters._codec`, and its result is copied back the same way, so
a test sees exactly what it would see if the body ran elsewhere: plain data, fresh objects, student
code unable to reach the test's own tensors. A grader installs another route (`set_route`) that
sends each call to a worker process; the tests do not change.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

from adapters import _codec, _speed  # noqa: F401 - _speed for its effect: faster first use of torch.optim


class Route(Protocol):
    runs_here: bool  # whether student code is imported into this process

    def call(self, function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Run the adapter body `function` with these arguments somewhere; its result, as plain data."""

    def begin_test(self, nodeid: str, seed: int) -> None:
        """A test starts: code it calls should see random number generators seeded with `seed`."""

    def bytes_read(self) -> int | None:
        """Bytes the code under test has read so far through read(2) and its kin, summed over its
        processes (`rchar`; a process's count goes to its parent when it is reaped); None where the
        system does not say."""


class InProcess:
    """Run adapter bodies here, on copies. Exceptions raised by student code propagate unchanged,
    with their full traceback, for easy debugging."""

    runs_here = True

    def call(self, function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        args, kwargs = _codec.copy((args, kwargs))
        return _codec.copy(function(*args, **kwargs))

    def begin_test(self, nodeid: str, seed: int) -> None:
        """Nothing to do: the test's own seeding of this process's generators applies."""

    def bytes_read(self) -> int | None:
        """This process's count (student code runs here): Linux's /proc/self/io, None elsewhere."""
        return process_bytes_read("self")


def process_bytes_read(pid: int | str) -> int | None:
    """What process `pid` has read through read(2) and its kin, its reaped children's reads included
    (`rchar` of /proc/PID/io, bytes); None where it cannot be read (no /proc, gone, or closed to
    this process)."""
    try:
        with open(f"/proc/{pid}/io") as handle:
            for line in handle:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


_route: Route = InProcess()


def set_route(route: Route) -> None:
    """Send every later adapter call through `route`."""
    global _route
    _route = route


def current_route() -> Route:
    return _route


def routed(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark an adapter: its body runs wherever the current route says. `adapter.body` is the body."""

    @functools.wraps(function)
    def adapter(*args: Any, **kwargs: Any) -> Any:
        return _route.call(function, args, kwargs)

    adapter.body = function
    return adapter

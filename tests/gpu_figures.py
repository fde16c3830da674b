"""The figure a GPU test judges, recorded beside its result, so that `staff gpu-check` can print each
test's figure against its bound (pytest's record_property: it lands in --junitxml's properties)."""

from __future__ import annotations

import json
from collections.abc import Callable

FIGURE = "gpu_figure"


def record_figure(record_property: Callable[[str, object], None], what: str, value: float,
                  low: float | None = None, high: float | None = None, note: str = "") -> None:
    """Record `value` (what it is, in words) and the bounds it must lie within (None: open)."""
    record_property(FIGURE, json.dumps({"what": what, "value": value, "low": low, "high": high, "note": note}))

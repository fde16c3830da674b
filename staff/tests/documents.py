"""Reading graded documents (results.json and the like) in the staff tests."""

from __future__ import annotations


def strings(value: object) -> list[str]:
    """Every string in a JSON document (keys included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (key, *strings(item))]
    return [s for item in value for s in strings(item)] if isinstance(value, list) else []

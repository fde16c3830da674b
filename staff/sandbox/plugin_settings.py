"""What the sandbox pytest plugin is told: one typed object, written as JSON by `write` and read back by `read`.

The grader (`staff.sandbox.layout.build`) writes it into the grade's workspace; the plugin, in the
test process, reads it. `read` checks the file against the dataclasses field by field (every key
known and present, every value of its declared type), so a file written by another version of the
grader, or edited by hand, stops the run with the key that is wrong instead of grading with a
setting silently dropped or defaulted.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from staff.sandbox.worker_config import WorkerConfig


@dataclass(frozen=True)
class PluginSettings:
    """The plugin's settings; the times come from `staff.sandbox.settings.Settings`, same names."""

    worker: WorkerConfig  # how the worker is confined (its folders, user, limits, protections)
    launch_config: str  # where the worker's launcher config is written
    startup_timeout_s: float  # seconds the worker may take to start
    test_timeout_s: float  # seconds of calls into student code one test may spend
    import_timeout_s: float  # seconds importing the submission's package may take
    modules: list[str]  # the package's importable modules, imported once in the worker before any test
    jobs: int  # grades run at once beside this one, which share the machine's memory (see memory_group)
    cuda_preflight: str = ""  # a GPU grade's: a cuda_preflight mode, run before any test; "" for none


class PluginSettingsError(ValueError):
    """The plugin's settings file is unreadable or does not match `PluginSettings`."""


def write(settings: PluginSettings, path: Path) -> None:
    path.write_text(json.dumps(dataclasses.asdict(settings), indent=1), encoding="utf-8")


def read(path: Path) -> PluginSettings:
    """The settings in `path`.

    Raises:
        PluginSettingsError: the file is not JSON, or a key is unknown or missing, or a value has the
            wrong type (the message names the file and the key, e.g. `worker.limits.memory_bytes`).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PluginSettingsError(f"{path}: cannot read the sandbox plugin's settings ({error})") from error
    try:
        return _typed(PluginSettings, data, "")
    except PluginSettingsError as error:
        raise PluginSettingsError(f"{path}: {error}") from None


def _typed(kind, value, where: str):
    """`value` (parsed JSON) as `kind`: a dataclass, a union with None, list[...], float, int, bool or str."""
    if dataclasses.is_dataclass(kind):
        return _dataclass(kind, value, where)
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in arguments:
            return None
        (inner,) = [a for a in arguments if a is not type(None)]
        return _typed(inner, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise PluginSettingsError(f"{where}: expected a list, got {value!r:.80}")
        return [_typed(arguments[0], item, f"{where}[{i}]") for i, item in enumerate(value)]
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind in (int, bool, str) and isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise PluginSettingsError(f"{where}: expected {getattr(kind, '__name__', kind)}, got {value!r:.80}")


def _dataclass(kind, value, where: str):
    if not isinstance(value, dict):
        raise PluginSettingsError(f"{where or 'the file'}: expected a JSON object of {kind.__name__}, "
                                  f"got {value!r:.80}")
    hints = typing.get_type_hints(kind)
    names = [spec.name for spec in dataclasses.fields(kind)]
    unknown, missing = sorted(set(value) - set(names)), [name for name in names if name not in value]
    if unknown or missing:
        raise PluginSettingsError(f"{where or kind.__name__}: " + "; ".join(
            ([f"unknown key(s) {unknown}"] if unknown else []) + ([f"missing key(s) {missing}"] if missing else []))
            + f" (expected exactly {names})")
    return kind(**{name: _typed(hints[name], value[name], f"{where}.{name}".lstrip(".")) for name in names})

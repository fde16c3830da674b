"""staff/ imports downwards: every import (module level or inside a function) from one unit of staff to
another goes to the same layer of `staff.LAYERS` or a lower one, and no files or units import each other
in a circle. A circle or an arrow back up is how a grader module ends up needing the course's gradebook
(the batch and its report once imported each other), so a change low down drags the whole tree along."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import staff

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {"tests", "hidden", "cases", "autograder_files"}  # test code, the graded suites, attack inputs


def module_name(path: Path) -> str:
    """`staff/grading/grade.py` -> `staff.grading.grade`; a package's `__init__.py` is the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def staff_modules() -> dict[str, Path]:
    return {module_name(p): p for p in (ROOT / "staff").rglob("*.py") if not SKIPPED & set(p.parts)}


def imported(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The staff modules that `path` (module `name`) imports anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {target for target in targets if target in modules and target not in (name, "staff")}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = staff_modules()
    return {name: imported(path, name, modules) for name, path in modules.items()}


def unit(module: str) -> str:
    """The unit a module belongs to: its package under staff/, or itself at the root."""
    return module.split(".")[1]


def cycle_in(graph: dict[str, set[str]]) -> list[str]:
    """One circle of the graph (its nodes, the first repeated at the end), or [] where there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_every_unit_of_staff_has_a_layer():
    # Mistake this catches: a new package or root module that no layer names, so no rule holds for it.
    layer_of = {name for layer in staff.LAYERS for name in layer}
    units = {unit(module) for module in staff_modules() if module != "staff"}
    assert units - layer_of == set(), f"add these to staff.LAYERS (staff/__init__.py): {sorted(units - layer_of)}"
    assert layer_of - units == set(), f"staff.LAYERS names what does not exist: {sorted(layer_of - units)}"


def test_no_import_goes_up_a_layer():
    # Mistake this catches: the sandbox importing the grade, or the grader importing the course's batch.
    level = {name: i for i, layer in enumerate(staff.LAYERS) for name in layer}
    upward = [f"{module} imports {target}" for module, targets in sorted(import_graph().items())
              for target in sorted(targets) if level[unit(target)] > level[unit(module)]]
    assert upward == [], "imports that go up a layer of staff.LAYERS:\n" + "\n".join(upward)


def test_no_files_import_each_other_in_a_circle():
    # Mistake this catches: the batch importing its gradebook, which imports the batch back.
    circle = cycle_in(import_graph())
    assert circle == [], "a circle of imports: " + " -> ".join(circle)


def test_no_units_import_each_other_in_a_circle():
    # Mistake this catches: two packages of the same layer each importing the other.
    units: dict[str, set[str]] = defaultdict(set)
    for module, targets in import_graph().items():
        if module != "staff":
            units[unit(module)] |= {unit(t) for t in targets} - {unit(module)}
    circle = cycle_in(units)
    assert circle == [], "a circle of imports between staff's packages: " + " -> ".join(circle)


def test_the_circle_finder_finds_a_circle():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": set()}) == []

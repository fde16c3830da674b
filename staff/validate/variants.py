"""Wheat and chaff: other implementations of the reference, each a few solution bodies replaced.

Each problem has a file `variants/pNN_<module>.toml` with `[[wheat]]` entries (correct
implementations that differ from the reference the way students' code differs) and `[[chaff]]`
entries (each one plausible misconception). An entry has a `name`, a `description`, a `bodies`
table from a function's qualified name ("can_view", "Cruncher.forward") to its new body (written
without indentation), and optionally `append`: module-level code added at the end (helpers). A
chaff also names, in `catches`, the tests (public or hidden) that must fail on it. A chaff that
only a GPU can tell from the reference (a timer that never synchronizes) names the `cuda` tests that
must fail on a GPU in `gpu_catches`, instead of `catches` or as well.
"""

from __future__ import annotations

import ast
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from staff import samples
from staff.errors import StaffError
from staff.sources.markers import find_blocks
from staff.sources.problem_files import variants_file
from tests.problems import PROBLEMS

WHEAT, CHAFF = "wheat", "chaff"


class VariantError(StaffError, ValueError):
    """A variants file that cannot be read, or a variant asked for by a name none has; the message says which."""


@dataclass(frozen=True)
class Variant:
    kind: str  # WHEAT or CHAFF
    problem: int
    name: str
    description: str
    bodies: dict[str, str] = field(default_factory=dict, hash=False)
    append: str = ""
    catches: tuple[str, ...] = ()  # a chaff: tests that catch it on any machine
    gpu_catches: tuple[str, ...] = ()  # a chaff: `cuda` tests that catch it on a GPU (`staff validate --gpu`)

    @property
    def key(self) -> str:
        return f"p{self.problem:02d}-{self.kind}-{self.name}"


def load_variants(problems: set[int] | None = None) -> list[Variant]:
    """Every wheat and chaff of these problems (all when None), in file order.

    Raises:
        ValueError: a file that is unreadable or names a function the reference does not have.
    """
    found = []
    for number, problem in PROBLEMS.items():
        path = variants_file(samples.REPO_ROOT, number)
        if (problems is not None and number not in problems) or not path.exists():
            continue
        try:
            spec = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise VariantError(f"{path}: {error}") from error
        blocks = {b.qualname for b in find_blocks((samples.REPO_ROOT / "cs336_basics" / f"{problem.module}.py")
                                                  .read_text(encoding="utf-8"))}
        for kind in (WHEAT, CHAFF):
            for entry in spec.get(kind, []):
                variant = Variant(kind, number, entry["name"], entry["description"], dict(entry.get("bodies", {})),
                                  entry.get("append", ""), tuple(entry.get("catches", ())),
                                  tuple(entry.get("gpu_catches", ())))
                unknown = set(variant.bodies) - blocks
                caught = variant.catches or variant.gpu_catches
                if unknown or (kind == CHAFF and not caught) or not (variant.bodies or variant.append):
                    raise VariantError(f"{path}: {kind} {variant.name!r}: unknown functions {sorted(unknown)}, or a "
                                     f"chaff without 'catches' or 'gpu_catches', or nothing changed")
                found.append(variant)
    return found


def variant_source(variant: Variant) -> str:
    """The reference module of the variant's problem with its bodies replaced and its code appended."""
    module = PROBLEMS[variant.problem].module
    text = (samples.REPO_ROOT / "cs336_basics" / f"{module}.py").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for block in sorted(find_blocks(text), key=lambda b: b.begin, reverse=True):
        if block.qualname in variant.bodies:
            body = textwrap.indent(textwrap.dedent(variant.bodies[block.qualname]).strip("\n") + "\n", block.indent)
            lines[block.begin + 1 : block.end] = [body]
    source = "".join(lines) + ("\n\n" + textwrap.dedent(variant.append).strip() + "\n" if variant.append else "")
    ast.parse(source, f"{module}.py ({variant.key})")
    return source


def build(variant: Variant, dest: Path) -> Path:
    """`dest`/cs336_basics: the reference with the variant's module in place of its own."""
    package = samples.reference(dest)
    (package / f"{PROBLEMS[variant.problem].module}.py").write_text(variant_source(variant), encoding="utf-8")
    return dest


def _imported_modules(tree: ast.Module) -> set[str]:
    """The cs336_basics modules a file imports, as `from cs336_basics.x import ...` or `from cs336_basics import x`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cs336_basics."):
            names.add(node.module.split(".", 1)[1])
        elif isinstance(node, ast.ImportFrom) and node.module == "cs336_basics":
            names.update(alias.name for alias in node.names)
    return names


def dependents() -> dict[int, set[int]]:
    """For each problem, the other problems whose modules or adapters import its module, directly or
    through another (Problem 7's Linear uses Problem 6's trunc_normal_init, Problem 11 trains Problem
    7's model, and a Problem 10 adapter saves and resumes Problem 7's Cruncher and Problem 8's
    AdaGrad): a variant of a problem can cost points there too."""
    by_module = {problem.module: number for number, problem in PROBLEMS.items()}
    found: dict[int, set[int]] = {number: set() for number in PROBLEMS}
    for number, problem in PROBLEMS.items():
        for path in (samples.REPO_ROOT / "cs336_basics" / f"{problem.module}.py",
                     samples.REPO_ROOT / "adapters" / f"{problem.module}.py"):
            if path.exists():
                for imported in _imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
                    if by_module.get(imported) not in (None, number):
                        found[by_module[imported]].add(number)
    changed = True
    while changed:  # the transitive closure: tiny, so a fixed-point loop is clearest
        changed = False
        for number, users in found.items():
            wider = users.union(*(found[user] for user in users)) - {number}
            if wider != users:
                found[number], changed = wider, True
    return found

"""Mutation testing of the solution bodies: small changes a suite must notice.

A small operator set over the reference's solution bodies only (code outside the markers is what
students are given): arithmetic and augmented assignments swapped (+ -, * /, // /, ** *), comparisons
flipped or shifted (< <=, == !=, in / not in), `and`/`or` swapped, `not` dropped, integer constants
moved by one (0 becomes 1), booleans negated, and single statements deleted. Each mutant's problem is
tested (public and hidden suites, in the student's own process: no sandbox is needed for code we
wrote) and counts as killed when a test fails. Survivors must be killed by a new test or listed in
`equivalent.toml` with the reason they cannot be told apart within the spec.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from staff import samples
from staff.sandbox.removal import scratch_folder
from staff.sources.markers import find_blocks
from staff.sources.problem_files import hidden_test_files, public_test_files
from tests.problems import PROBLEMS

EQUIVALENT = Path(__file__).resolve().parent / "equivalent.toml"
SWAPS: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                           ast.FloorDiv: ast.Div, ast.Pow: ast.Mult, ast.Mod: ast.FloorDiv,
                           ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                           ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And, ast.BitAnd: ast.BitOr,
                           ast.BitOr: ast.BitAnd, ast.LShift: ast.RShift, ast.RShift: ast.LShift}


@dataclass(frozen=True)
class Mutant:
    problem: int
    module: str
    line: int  # 1-based, in the reference module
    column: int  # byte offset in that line (the ast's convention)
    end_line: int
    end_column: int
    operator: str
    original: str  # the source text replaced
    replacement: str
    function: str = ""  # the enclosing function's qualified name ("" at module level)
    line_text: str = ""  # the stripped text of the mutant's first line
    ordinal: int = 1  # the n-th mutant with the same function, line text and change

    @property
    def key(self) -> str:
        """What the mutant changes, not where: an edit elsewhere in the module keeps the key (equivalent.toml
        lists mutants by it), an edit of the line itself makes it stale, which `staff check` reports."""
        place = f"{self.module}.{self.function}" if self.function else self.module
        return (f"{place}: `{self.line_text}`: {self.original} -> {self.replacement}"
                + (f" (#{self.ordinal})" if self.ordinal > 1 else ""))


def _changes(node: ast.AST) -> Iterator[tuple[str, ast.AST | None]]:
    """(operator name, replacement node or None to delete) for one node."""
    if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in SWAPS:
        yield f"swap {type(node.op).__name__}", type(node)(**{**vars(node), "op": SWAPS[type(node.op)]()})
    elif isinstance(node, ast.BoolOp) and type(node.op) in SWAPS:
        yield f"swap {type(node.op).__name__}", ast.BoolOp(op=SWAPS[type(node.op)](), values=node.values)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAPS:
        yield f"swap {type(node.ops[0]).__name__}", ast.Compare(node.left, [SWAPS[type(node.ops[0])]()],
                                                                 node.comparators)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        yield "drop unary", node.operand
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield "negate bool", ast.Constant(not node.value)
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        yield "int + 1", ast.Constant(node.value + 1)
        if node.value != 0:
            yield "int - 1", ast.Constant(node.value - 1)
    elif isinstance(node, ast.Constant) and type(node.value) is float and node.value not in (0.0,):
        yield "float * 2", ast.Constant(node.value * 2)


def mutants_of(problem: int) -> list[Mutant]:
    """Every mutant of the problem's solution bodies."""
    module = PROBLEMS[problem].module
    source = (samples.REPO_ROOT / "cs336_basics" / f"{module}.py").read_text(encoding="utf-8")
    return mutants_in(source, problem, module)


def mutants_in(text: str, problem: int, module: str) -> list[Mutant]:
    """Every mutant of the solution bodies of `text`, the source of `module`."""
    inside = set()
    for block in find_blocks(text):
        inside |= set(range(block.begin + 2, block.end + 1))  # 1-based lines strictly between the markers
    lines = text.splitlines()
    found = []
    for node, function in _nodes_in_functions(ast.parse(text)):
        if not hasattr(node, "lineno") or node.lineno not in inside or node.end_lineno not in inside:
            continue
        original = ast.get_source_segment(text, node)
        if original is None:
            continue
        where = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        context = {"function": function, "line_text": lines[node.lineno - 1].strip()}
        for operator, replacement in _changes(node):
            found.append(Mutant(problem, module, *where, operator, original, ast.unparse(replacement), **context))
        is_docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.Expr) and not is_docstring:
            found.append(Mutant(problem, module, *where, "delete statement", original, "pass", **context))
    ordered, seen = sorted(set(found), key=lambda m: (m.line, m.column, m.operator, m.replacement)), {}
    for index, mutant in enumerate(ordered):
        same = (mutant.function, mutant.line_text, mutant.original, mutant.replacement)
        seen[same] = seen.get(same, 0) + 1
        ordered[index] = dataclasses.replace(mutant, ordinal=seen[same])
    return ordered


def _nodes_in_functions(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every node of `tree` with the qualified name of the function (or class) it is inside."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, scope = stack.pop()
        yield node, scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope = f"{scope}.{node.name}" if scope else node.name
        stack.extend((child, scope) for child in ast.iter_child_nodes(node))


def stale_equivalents() -> list[str]:
    """Keys in equivalent.toml that name no mutant of the reference as it is now (its line was edited)."""
    current = {m.key for number in PROBLEMS for m in mutants_of(number)}
    return sorted(key for key in equivalents() if key not in current)


def mutated_source(mutant: Mutant) -> str:
    """The module with the mutant's one change made, at its exact position."""
    path = samples.REPO_ROOT / "cs336_basics" / f"{mutant.module}.py"
    lines = path.read_bytes().splitlines(keepends=True)
    start = sum(len(line) for line in lines[: mutant.line - 1]) + mutant.column
    end = sum(len(line) for line in lines[: mutant.end_line - 1]) + mutant.end_column
    data = b"".join(lines)
    source = (data[:start] + mutant.replacement.encode() + data[end:]).decode("utf-8")
    ast.parse(source)
    return source


def killed(mutant: Mutant, timeout_s: float = 300) -> bool | None:
    """Whether a test of the mutant's problem fails (None: the mutant does not even compile)."""
    try:
        source = mutated_source(mutant)
    except SyntaxError:
        return None
    with scratch_folder("staff-mutant-") as root:
        for part in ("adapters", "tests", "pyproject.toml"):
            source_path = samples.REPO_ROOT / part
            (shutil.copytree if source_path.is_dir() else shutil.copyfile)(source_path, root / part)
        (root / "staff").mkdir()
        (root / "staff" / "__init__.py").touch()
        shutil.copytree(samples.REPO_ROOT / "staff" / "hidden", root / "staff" / "hidden")
        package = samples.reference(root)
        (package / f"{mutant.module}.py").write_text(source, encoding="utf-8")
        files = [str(p.relative_to(root)) for p in public_test_files(root, mutant.problem)
                 + hidden_test_files(root, mutant.problem)]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
        env.update(PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
        try:
            done = subprocess.run([sys.executable, "-m", "pytest", *files, "-x", "-q", "--tb=no", "--assert=plain",
                                   "-p", "no:cacheprovider", f"--timeout={timeout_s:g}"], cwd=root, env=env,
                                  capture_output=True, timeout=timeout_s * 4)
        except subprocess.TimeoutExpired:
            return True  # a mutant that hangs the suite is noticed
    return done.returncode != 0


def equivalents() -> dict[str, str]:
    """Mutant key -> why it is equivalent within the spec, from equivalent.toml."""
    if not EQUIVALENT.exists():
        return {}
    return {entry["mutant"]: entry["why"] for entry in tomllib.loads(EQUIVALENT.read_text())["equivalent"]}


def run(problems: list[int], jobs: int) -> tuple[dict[int, dict[str, int]], list[Mutant]]:
    """Kill counts per problem and the surviving mutants not listed as equivalent."""
    mutants = [m for p in problems for m in mutants_of(p)]
    known = equivalents()
    counts = {p: {"mutants": 0, "killed": 0, "equivalent": 0, "not compiling": 0} for p in problems}
    survivors = []
    with ThreadPoolExecutor(max_workers=jobs) as pool, tqdm(total=len(mutants), unit="mutant", file=sys.stderr) as bar:
        futures = {pool.submit(killed, m): m for m in mutants}
        for future in as_completed(futures):
            mutant, result = futures[future], future.result()
            row = counts[mutant.problem]
            row["mutants"] += 1
            if result is None:
                row["not compiling"] += 1
            elif result:
                row["killed"] += 1
            elif mutant.key in known:
                row["equivalent"] += 1
            else:
                survivors.append(mutant)
            bar.update(1)
    return counts, sorted(survivors, key=lambda m: (m.problem, m.line))


def all_mutants_killed(problems: list[int], jobs: int) -> bool:
    """Grade every mutant of `problems`' reference, printing each problem's kill rate and the survivors;
    whether none survived."""
    counts, survivors = run(problems, jobs)
    print(f"{'problem':<26}{'mutants':>9}{'killed':>8}{'equiv.':>8}{'survive':>9}{'kill rate':>11}")
    for number, row in counts.items():
        live = row["mutants"] - row["not compiling"] - row["equivalent"]
        rate = row["killed"] / live if live else 1.0
        survive = live - row["killed"]
        print(f"{f'{number}. {PROBLEMS[number].title}':<26}{row['mutants']:>9}{row['killed']:>8}"
              f"{row['equivalent']:>8}{survive:>9}{rate:>10.1%}")
    for mutant in survivors:
        print(f"SURVIVED problem {mutant.problem}: {mutant.key}")
    return not survivors

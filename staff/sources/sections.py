"""Which handout section each solution block belongs to, so a stub can send the student there.

A module's page is the `Handout:` line of its docstring. Within the page, a block's section is
found by two rules, tried in order, for the module-level name the block belongs to (the function,
or the class of a method):

1. the sections of that page (`§N.k`) that public CPU tests cite in the test functions reaching the
   name through an adapter (a `cuda` test's section is about the device): the lowest of those whose
   text names it in backticks (as in rule 2), or else the lowest of them all. This is a section the
   student's failing tests already point to.
2. the first `## N.k` section of the page whose text names the function, its class or the method in
   backticks (`` `materialize` ``, `` `materialize(storage, ...)` ``, `` `Cruncher` ``).

In both, a method's class is looked for before the method's own name (`forward` is named where
`Linear` is specified too; `Cruncher.forward` belongs where `Cruncher` is).

A block neither rule places is an error: the stub would send the student nowhere.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from staff.errors import StaffError
from staff.sandbox.layout import PACKAGE
from staff.sources.markers import SolutionBlock, handout_page

_SECTION_HEADING = re.compile(r"^## (\d+\.\d+) ", re.MULTILINE)
_CITED = re.compile(r"§(\d+\.\d+)")


class SectionError(StaffError, ValueError):
    """A solution block whose handout section cannot be found; the message says which and why."""


def _section_key(section: str) -> tuple[int, ...]:
    return tuple(int(part) for part in section.split("."))


def page_sections(text: str) -> dict[str, str]:
    """Each `## N.k` section of a page, "N.k" -> its heading and text up to the next `## ` heading."""
    parts = re.split(r"^(?=## )", text, flags=re.MULTILINE)
    return {match.group(1): part for part in parts if (match := _SECTION_HEADING.match(part))}


def _adapter_reach(adapters: Path) -> dict[str, set[tuple[str, str]]]:
    """For every adapter function: the (module, name) pairs of `cs336_basics` it uses, following
    calls to other functions of the same adapter module."""
    reach: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in sorted(adapters.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        direct: dict[str, set[tuple[str, str]]] = {}
        calls: dict[str, set[str]] = {}
        for name, node in functions.items():
            modules: dict[str, str] = {}  # local alias -> cs336_basics module
            used: set[tuple[str, str]] = set()
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module == PACKAGE:
                    modules.update({alias.asname or alias.name: alias.name for alias in inner.names})
                elif isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith(PACKAGE + "."):
                    used |= {(inner.module.split(".", 1)[1], alias.name) for alias in inner.names}
            for inner in ast.walk(node):
                if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) and inner.value.id in modules:
                    used.add((modules[inner.value.id], inner.attr))
            direct[name] = used
            calls[name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in functions}
        for name in functions:
            for current in _called_from(name, calls):
                reach[name] |= direct[current]
    return reach


def _called_from(start: str, calls: dict[str, set[str]]) -> set[str]:
    """start and every function of its module it calls, directly or through others."""
    seen, todo = {start}, [start]
    while todo:
        current = todo.pop()
        todo.extend(calls[current] - seen)
        seen |= calls[current]
    return seen


def _cited_sections(tests: Path, reach: dict[str, set[tuple[str, str]]]) -> dict[tuple[str, str], set[str]]:
    """(module, name) -> the sections cited by test-module functions that reach
    `cs336_basics.module.name` through an adapter, directly or through helpers of the same test
    module (a check that takes the section from its caller). Which page a section is of follows from
    the module's own page: a section that page lacks (a later problem's test reaching this module) is
    dropped where the page's sections are known."""
    cited: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in sorted(tests.glob("test_*.py")):
        source = path.read_text(encoding="utf-8")
        functions = {node.name: node for node in ast.parse(source, str(path)).body if isinstance(node, ast.FunctionDef)}
        names = {name: {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                 | {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} for name, node in functions.items()}
        calls = {name: used & functions.keys() for name, used in names.items()}
        for name, node in functions.items():
            if _marked_cuda(node):  # a GPU test's section is about the device, not where the function is specified
                continue
            sections = set(_CITED.findall(ast.get_source_segment(source, node) or ""))
            adapters = {n for function in _called_from(name, calls) for n in names[function] if n in reach}
            for adapter in adapters:
                for module, target in reach[adapter]:
                    cited[(module, target)] |= sections
    return cited


def _marked_cuda(node: ast.FunctionDef) -> bool:
    """Whether a test function is decorated `@pytest.mark.cuda`."""
    return any(isinstance(d, ast.Attribute) and d.attr == "cuda" for d in node.decorator_list)


def _names_in_backticks(names: list[str], text: str) -> bool:
    return any(re.search(rf"`(?:[\w.]*\.)?{re.escape(name)}(?![\w])[^`\n]*`", text) for name in names)


class SectionIndex:
    """Finds the handout section of solution blocks in the package of one source tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cited = _cited_sections(root / "tests", _adapter_reach(root / "adapters"))

    def section(self, module: Path, source: str, block: SolutionBlock) -> str:
        """The section of `block` (found in `module`, whose text is `source`), e.g. "§2.6".

        Raises:
            SectionError: the module names no page, the page is missing, or no rule places the block.
        """
        where = f"{module}:{block.begin + 1}: {block.qualname or block.function}"
        page = handout_page(source)
        if page is None:
            raise SectionError(f"{where}: the module docstring has no `Handout: handout/NN_topic.md` line")
        if not (self.root / page).is_file():
            raise SectionError(f"{where}: its module's Handout line names {page}, which does not exist")
        sections = page_sections((self.root / page).read_text(encoding="utf-8"))
        cited = self._cited.get((module.stem, block.owner), set()) & set(sections)
        parts = (block.qualname or block.function).split(".")
        names = [block.owner] + [p for p in parts[1:] if not p.startswith("__")]
        # The function, or a method's class, before the method's own name: `forward` is named in §7.1 (Linear)
        # and §7.2 (Cruncher), and Cruncher.forward is specified where `Cruncher` is.
        for wanted in ([block.owner], names):
            named = {number for number in cited if _names_in_backticks(wanted, sections[number])}
            if named:
                return "§" + min(named, key=_section_key)
        if cited:
            return "§" + min(cited, key=_section_key)
        for wanted in ([block.owner], names):
            for number, text in sections.items():
                if _names_in_backticks(wanted, text):
                    return "§" + number
        raise SectionError(
            f"{where} has no handout section: no public test citing {page} reaches `{block.owner}` through an "
            f"adapter, and no '## N.k' section of {page} names {' or '.join(f'`{n}`' for n in names)} in backticks"
        )

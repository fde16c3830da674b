"""What in a submission's code marks its grade for a person's review: code that reaches past what the
grader's instruments can see.

Some checks are made inside the worker, in the process that runs the student's code: which operators
a call ran (a dispatch mode, a patched name), whether it used autograd, whether it changed its inputs,
what a timer measured. Code in that process can reach those instruments and change what they record,
but only through torch's private modules (`torch._C`, `torch.utils._python_dispatch`, `torch.ops`,
`torch.library`), frames and the objects they hold (`sys._getframe`, `f_back`, `gc.get_objects`,
`__closure__`), code built at run time (`exec`, `getattr` with a computed name, `importlib`), or
foreign code (`ctypes`). None of that is needed for any problem, and a static look finds each use:
a name written out, or a dynamic construct that could hide one. A grade whose code has any is marked
with where and what (`find`); its points stand, and a person decides. Honest code written as the
handout asks has none (the reference, every variant `staff validate` grades: a test checks).

Reads each file once, bounded (`MOST_BYTES`); a file the parser cannot take (too deep, too large) is
a mark itself. Syntax errors are not: that code fails to import and earns nothing anyway.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass
from pathlib import Path

from adapters._text import shown_text
from staff.intake.submission import PACKAGE

MOST_BYTES = 1 << 20  # a file larger than this is not parsed: marked instead
MOST_MARKS = 20  # kept per grade; a count says how many more
MOST_CHARS = 200  # of a file's name or a mark's words, as kept
OWN = PACKAGE  # the student's package: its own private names are its own business

# Modules whose import alone reaches past the instruments (or runs foreign code).
MODULES = {
    "ctypes": "foreign code through ctypes", "cffi": "foreign code through cffi",
    "gc": None,  # get_objects and its kin only (ATTRIBUTES): gc.collect() is honest
    "inspect": "frames and objects through inspect",
    "importlib": "importing modules by a computed name (importlib)", "builtins": "the builtins module",
    "marshal": "code objects from bytes (marshal)", "types": None,  # see TYPES
    "torch.library": "kernels registered for torch's operators (torch.library)",
    "torch.overrides": "torch's function-mode machinery (torch.overrides)", "torch.ops": "torch's operator table",
    "operator": None,  # attrgetter and methodcaller only: see CALLS
    "pickle": None, "dill": None, "cloudpickle": None,  # their loads only: see PICKLE_LOADS
}
# Attributes, on any object, that lead to frames, the objects a function closes over, or the type system.
ATTRIBUTES = {
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "cr_frame", "ag_frame", "gi_code", "__closure__", "__globals__", "__code__", "__builtins__", "__subclasses__",
    "__getattribute__", "__mro__", "__bases__", "__base__", "__self__", "__func__", "__wrapped__", "cell_contents",
    "__kwdefaults__", "__defaults__", "__reduce__", "__reduce_ex__", "_getframe", "_current_frames", "settrace",
    "setprofile", "addaudithook", "get_objects", "get_referrers", "get_referents", "get_field", "modules",
    "__getattr__", "__setattr__", "__delattr__", "__torch_function__", "__torch_dispatch__",
}
# A module's attributes as a dict (its private ones by a string key): `self.__dict__` is honest.
ON_MODULES = {"__dict__"}
# Hooks a class of the student's can define that put its code inside torch's dispatch, before the grader's modes.
HOOKS = {"__torch_function__", "__torch_dispatch__"}
TYPES = {"FunctionType", "LambdaType", "CodeType", "CellType", "FrameType", "TracebackType", "MethodType"}
ATTRIBUTE_ROOTS_ANY = {"modules"}  # `sys.modules` only: `self.modules` or a model's `.modules()` is honest
# Calls that run or reach code by a name computed at run time.
CALLS = {"exec": "code run from text (exec)", "eval": "code run from text (eval)",
         "compile": "code compiled from text", "__import__": "importing a module by a computed name",
         "globals": "the module's globals as a dict", "locals": "a frame's locals as a dict",
         "vars": "an object's attributes as a dict", "breakpoint": "the debugger",
         "attrgetter": "attributes fetched by a computed name", "methodcaller": "methods fetched by a computed name"}
NAMED_BY_TEXT = {"getattr", "setattr", "delattr", "hasattr"}  # honest with a written-out public name
PICKLE_LOADS = {"load", "loads", "Unpickler"}
# Private torch names honest code uses: torch's multi-tensor updates, which the handout's AdaGrad may use.
PRIVATE_ALLOWED_PREFIXES = ("_foreach_",)


@dataclass(frozen=True)
class Mark:
    """One place in the code that marks the grade for review: the file (relative to the package),
    the line, and what it reaches."""

    file: str
    line: int
    what: str

    def as_data(self) -> dict[str, object]:
        """As results.json keeps it: the student's file name and names shown without control
        characters, each cut to MOST_CHARS (an identifier has no length limit)."""
        data = asdict(self)
        data.update(file=shown_text(self.file)[:MOST_CHARS], what=shown_text(self.what)[:MOST_CHARS])
        return data


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and not name.startswith(PRIVATE_ALLOWED_PREFIXES)


def _dotted(node: ast.AST) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None where the chain does not start at a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


class _Look(ast.NodeVisitor):
    def __init__(self, file: str) -> None:
        self.file, self.marks = file, []
        self.aliases: dict[str, str] = {}  # a name bound by an import of another package -> the module path

    def mark(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        if not self.marks or self.marks[-1].line != line:  # one a line: `torch._C._X` is not two
            self.marks.append(Mark(self.file, line, what))

    def _module(self, node: ast.AST, module: str) -> None:
        parts = module.split(".")
        if any(_private(part) for part in parts):
            self.mark(node, f"a private module ({module})")
        for length in range(len(parts), 0, -1):
            what = MODULES.get(".".join(parts[:length]))
            if what:
                self.mark(node, what)
                break

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] == OWN:
                continue
            self._module(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module or node.module.split(".")[0] == OWN:
            return  # the student's own package
        self._module(node, node.module)
        top = node.module.split(".")[0]
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if alias.name == "*":
                continue
            if _private(alias.name) or alias.name in ATTRIBUTES - ATTRIBUTE_ROOTS_ANY:
                self.mark(node, f"a private name ({full})")
            elif top in ("pickle", "dill", "cloudpickle") and alias.name in PICKLE_LOADS:
                self.mark(node, f"objects built by name from bytes ({full})")
            elif top == "types" and alias.name in TYPES:
                self.mark(node, f"functions or frames as objects ({full})")
            elif alias.name in CALLS and top in ("builtins", "operator"):
                self.mark(node, CALLS[alias.name])
            elif full in MODULES:
                self._module(node, full)
            self.aliases[alias.asname or alias.name] = full

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _dotted(node)
        root = self.aliases.get(chain[0]) if chain else None
        if node.attr in ATTRIBUTES and (node.attr not in ATTRIBUTE_ROOTS_ANY or (root or "").split(".")[0] == "sys"):
            self.mark(node, f"{node.attr} (frames, closures or the objects behind the grader's checks)")
        elif chain and root is not None:
            full, top = ".".join([root, *chain[1:]]), root.split(".")[0]
            if _private(node.attr):
                self.mark(node, f"a private name ({full})")
            elif node.attr in ON_MODULES:
                self.mark(node, f"a module's attributes as a dict ({full})")
            elif full in MODULES and MODULES[full]:
                self.mark(node, MODULES[full])
            elif top in ("pickle", "dill", "cloudpickle") and node.attr in PICKLE_LOADS:
                self.mark(node, f"objects built by name from bytes ({full})")
            elif top == "types" and node.attr in TYPES:
                self.mark(node, f"functions or frames as objects ({full})")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in HOOKS:
            self.mark(node, f"a class hooked into torch's dispatch ({node.name})")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name in CALLS and (isinstance(node.func, ast.Name) or name in ("attrgetter", "methodcaller")):
            self.mark(node, CALLS[name])
        elif name in NAMED_BY_TEXT and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            text = node.args[1]
            if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
                self.mark(node, f"an attribute named at run time ({name})")
            elif _private(text.value) or text.value in ATTRIBUTES:
                self.mark(node, f"a private name ({name} {text.value!r})")
        for keyword in node.keywords:
            if keyword.arg == "weights_only" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value):
                self.mark(node, "a checkpoint loaded with pickle's full powers (weights_only not True)")
            elif keyword.arg == "allow_pickle" and not (isinstance(keyword.value, ast.Constant)
                                                        and keyword.value.value is False):
                self.mark(node, "an array file loaded with pickle's powers (allow_pickle)")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.mark(node, "the builtins (__builtins__)")


def marks_in(source: bytes | str, file: str) -> list[Mark]:
    """The marks in one file's `source` (named `file` in them): bytes are decoded as Python decodes a
    file it imports, by its coding line (a file in UTF-7 reads `+AF8-C` as `_C`)."""
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError:
        return []  # it will not import: no point it earns needs a person
    except (RecursionError, MemoryError, ValueError):
        return [Mark(file, 0, "code nested too deeply for the grader to read")]
    look = _Look(file)
    try:
        look.visit(tree)
    except RecursionError:
        return [*look.marks, Mark(file, 0, "code nested too deeply for the grader to read")]
    return look.marks


def find(package: Path) -> list[Mark]:
    """Every mark in the `.py` files below `package` (a submission's laid-out package), in file and
    line order; at most MOST_MARKS (the last then says how many were left out)."""
    marks: list[Mark] = []
    for path in sorted(package.rglob("*.py")):
        if not path.is_file() or path.is_symlink():
            continue
        name = path.relative_to(package).as_posix()
        if path.stat().st_size > MOST_BYTES:
            marks.append(Mark(name, 0, f"a file over {MOST_BYTES >> 20} MiB, too large for the grader to read"))
            continue
        marks += marks_in(path.read_bytes(), name)
    if len(marks) > MOST_MARKS:
        left = len(marks) - MOST_MARKS + 1
        marks = [*marks[:MOST_MARKS - 1], Mark(marks[MOST_MARKS - 1].file, marks[MOST_MARKS - 1].line,
                                               f"and {left} more")]
    return marks


def summary_line(marks: list[dict[str, object]]) -> str:
    """What a grade's summary says of its marks (`Mark.as_data` each), for the student and the staff."""
    places = "; ".join(f"{m['file']}:{m['line']} {m['what']}" for m in marks)
    return (f"Marked for review by the course staff: your code reaches where some of the grader's checks run "
            f"(torch's private modules, frames, code built at run time), so those checks cannot vouch for what it "
            f"does. Your points stand until a person has read it. Where: {places}")

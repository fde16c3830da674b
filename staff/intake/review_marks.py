"""What in a submission's code marks its grade for a person's review: code that reaches past what the
grader's instruments can see.

Some checks are made inside the worker, in the process that runs the student's code: which operators
a call ran (a dispatch mode, a patched name), whether it used autograd, whether it changed its inputs,
what a timer measured. Code in that process can reach those instruments and change what they record,
but only through torch's private modules (`torch._C`, `torch.utils._python_dispatch`, `torch.ops`,
`torch.library`), frames and the objects they hold (`sys._getframe`, `f_back`, `gc.get_objects`,
`__closure__`), code built at run time (`exec`, `getattr` with a computed name, `importlib`, the standard
library's runners of text: `timeit`, typing's hints of a string annotation, `logging.config`), the grader's
modules named in text (whole or in pieces), attributes set on the modules and classes the instruments are
built on (`FlopCounterMode.get_total_flops = f`, a dispatch mode's `__enter__`), or foreign code (`ctypes`).
None of that is needed for any problem, and a static look finds each use: a name written out, or a dynamic
construct that could hide one. A grade whose code has any is marked
with where and what (`find`); its points stand, and a person decides. Honest code written as the
handout asks has none (the reference, every variant `staff validate` grades: a test checks).

Reads each file once, bounded (`MOST_BYTES`); a file the parser cannot take (too deep, too large, a
syntax error, a codec the code registers at run time) is a mark itself.
"""

from __future__ import annotations

import _string
import ast
import string
from dataclasses import asdict, dataclass
from pathlib import Path

from adapters._text import shown_text
from staff.intake.review_lists import (
    ATTRIBUTES,
    CALLS,
    COMPILED,
    DESCRIPTIONS,
    DOCUMENTED_UNDERSCORED,
    GRADER_MODULES,
    HOOKS,
    MODULES,
    NAMED_BY_TEXT,
    OWN_OBJECTS,
    PICKLE_LOADS,
    PRIVATE_ALLOWED_PREFIXES,
    SETTABLE_DUNDERS,
    SETTINGS_PREFIXES,
    SYS_ATTRIBUTES,
    TYPES,
)
from staff.intake.review_text import folded, grader_name_in, is_plain_type, parsed_type, type_texts
from staff.intake.submission import PACKAGE

MOST_BYTES = 1 << 20  # a file larger than this is not parsed: marked instead
MOST_MARKS = 20  # kept per grade; a count says how many more
MOST_CHARS = 200  # of a file's name or a mark's words, as kept
MOST_TOTAL_BYTES = 4 << 20  # read over the whole upload (the intake takes 50 MiB): the rest is marked unread
MOST_LINKS = 32  # names in one attribute chain looked at one by one; a longer chain is a mark itself
OWN = PACKAGE  # the student's package: its own private names are its own business

DEFAULTED = "(a parameter's default)"  # the root of an attribute set on a parameter given a computed default
CLASS_OF_ANOTHER = "(an object's class)"  # the root of an attribute set on `type(x)` or `x.__class__`


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


def _named_chain(node: ast.AST | None) -> list[str] | None:
    """The chain of names `node` reads: `a.b` as `_dotted` has it, `getattr(a.b, "c")` as a.b.c."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
            len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        chain = _named_chain(node.args[0])
        return None if chain is None else [*chain, node.args[1].value]
    return _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None


def _class_of_another(owner: ast.AST) -> bool:
    """Whether `owner` is `type(x)` or `x.__class__` for an x other than a method's own object: a class that
    every other instance shares (the grader's counter too, where x is one)."""
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "type" and \
            len(owner.args) == 1:
        inner = owner.args[0]
    elif isinstance(owner, ast.Attribute) and owner.attr == "__class__":
        inner = owner.value
    else:
        return False
    return not (isinstance(inner, ast.Name) and inner.id in OWN_OBJECTS)


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
        self.aliases: dict[str, str] = {}  # a name bound to another package's module or object -> its path
        self.called: set[int] = set()  # the Name nodes called where they stand (`eval(...)`, not `e = eval`)
        self.own_writes: set[int] = set()  # the `self.__dict__` nodes only written to (see OWN_OBJECTS)
        # Names an import bound (the student's own modules too), and names given such a name's chain.
        self.imported: set[str] = set()
        self.defined: set[str] = set()  # functions and classes written in the file
        # Each attribute set or deleted: the node, the attribute, its object's chain of names (None where the
        # object is no chain; its root as `_store` has it) and the value given (None: deleted or not seen).
        self.stores: list[tuple[ast.AST, str, list[str] | None, ast.AST | None]] = []
        # The parameters of each function the visit is in, innermost last, each to whether it has a default that
        # is no constant (`def f(self=sys)`: any object may be its value, so it is neither the method's own nor free).
        self.parameters: list[dict[str, bool]] = []
        self.store_values: dict[int, ast.AST] = {}  # an attribute target's node -> the value it is given
        self.covered: set[int] = set()  # nodes folded into a text (review_text.folded) or read as a type already

    def mark(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        if not self.marks or self.marks[-1].line != line:  # one a line: `torch._C._X` is not two
            self.marks.append(Mark(self.file, line, what))

    def _module(self, node: ast.AST, module: str) -> None:
        parts = module.split(".")
        if parts[0] in GRADER_MODULES:
            self.mark(node, f"the grader's own code ({module})")
        if any(_private(part) for part in parts):
            self.mark(node, f"a private module ({module})")
        for length in range(len(parts), 0, -1):
            what = MODULES.get(".".join(parts[:length]))
            if what:
                self.mark(node, what)
                break

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imported.add(alias.asname or alias.name.split(".")[0])
            if alias.name.split(".")[0] == OWN:
                continue
            self._module(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imported.update(alias.asname or alias.name for alias in node.names)
        if node.level or not node.module or node.module.split(".")[0] == OWN:
            return  # the student's own package
        self._module(node, node.module)
        top = node.module.split(".")[0]
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if alias.name == "*":
                continue
            if (_private(alias.name) and full not in DOCUMENTED_UNDERSCORED) or alias.name in ATTRIBUTES or \
                    (top == "sys" and alias.name in SYS_ATTRIBUTES):
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

    def _bind(self, target: ast.AST, value: ast.AST | None) -> None:
        """`T = torch`, `U = torch.utils`, `C: type = F`, `a, b = torch.x, torch.y`: the names stand for what
        they were given; an attribute target keeps its value for the check of what it sets (`finish`)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and \
                len(value.elts) == len(target.elts) else [value] * len(target.elts)
            for part, part_value in zip(target.elts, values, strict=True):
                self._bind(part, part_value)
        elif isinstance(target, ast.Attribute) and value is not None:
            self.store_values[id(target)] = value
        elif isinstance(target, ast.Name):
            chain = _named_chain(value)
            if chain and chain[0] in self.aliases:
                self.aliases[target.id] = ".".join([self.aliases[chain[0]], *chain[1:]])
            if chain and chain[0] in self.imported:
                self.imported.add(target.id)

    def visit_For(self, node: ast.For | ast.AsyncFor | ast.comprehension) -> None:
        if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)):  # `for C in (FlopCounterMode,)`: C is each
            for item in node.iter.elts:
                self._bind(node.target, item)
        self.generic_visit(node)

    visit_AsyncFor = visit_comprehension = visit_For

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._bind(target, node.value)
            if isinstance(target, ast.Name) and target.id in HOOKS:
                self.mark(node, f"a class hooked into torch's dispatch ({target.id})")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._bind(node.target, node.value)
        self._annotation(node.annotation)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind(node.target, node.value)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # A chain `a.b.c` is looked at once, link by link from its root: visiting each link's own chain again
        # would cost the square of its length (240 links on each of 4,000 lines took 17 s).
        links, base = [], node
        while isinstance(base, ast.Attribute):
            links.append(base)
            base = base.value
        if len(links) > MOST_LINKS:
            self.mark(node, f"an attribute chain of {len(links)} names, longer than the grader reads")
        else:
            chain = [base.id] if isinstance(base, ast.Name) else None
            for link in reversed(links):
                chain = None if chain is None else [*chain, link.attr]
                self._attribute(link, chain)
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                self._store(node, node.attr, node.value, self.store_values.get(id(node)))
        self.visit(base)

    def _attribute(self, node: ast.Attribute, chain: list[str] | None) -> None:
        """The checks of one link, `chain` its names from the root (None where the root is no name)."""
        root = self.aliases.get(chain[0]) if chain else None
        top = (root or "").split(".")[0]
        if node.attr in ATTRIBUTES or (top == "sys" and node.attr in SYS_ATTRIBUTES):
            self.mark(node, f"{node.attr} (frames, closures, torch's dispatch, autograd's graph or the objects "
                            f"behind the grader's checks)")
        elif node.attr == "__dict__" and not (chain and len(chain) == 2 and chain[0] in OWN_OBJECTS
                                               and id(node) in self.own_writes):
            self.mark(node, "an object's attributes as a dict (__dict__)")
        elif chain and root is not None:
            full = ".".join([root, *chain[1:]])
            if _private(node.attr) and full not in DOCUMENTED_UNDERSCORED:
                self.mark(node, f"a private name ({full})")
            elif full in MODULES and MODULES[full]:
                self.mark(node, MODULES[full])
            elif top in ("pickle", "dill", "cloudpickle") and node.attr in PICKLE_LOADS:
                self.mark(node, f"objects built by name from bytes ({full})")
            elif top == "types" and node.attr in TYPES:
                self.mark(node, f"functions or frames as objects ({full})")

    def _resolved(self, node: ast.AST) -> list[str]:
        """The dotted path of what `node` names through the file's imports (`t.x` with `import timeit as t`:
        timeit.x); empty where it names nothing imported."""
        chain = _dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if not chain or chain[0] not in self.aliases:
            return []
        return [*self.aliases[chain[0]].split("."), *chain[1:]]

    def _store(self, node: ast.AST, attribute: str, owner_node: ast.AST, value: ast.AST | None) -> None:
        """An attribute set or deleted, kept for `finish` with its object's chain of names, whose root says where
        the name came from where the function it is set in tells: a parameter ("", bound by no import, as in
        `def f(model)` beside `from . import model`; DEFAULTED where a computed default may give it one) or an
        object's class (CLASS_OF_ANOTHER: `type(x)`, `x.__class__`, which every other instance shares)."""
        owner = _dotted(owner_node) if isinstance(owner_node, (ast.Name, ast.Attribute)) else None
        scope = next((names for names in reversed(self.parameters) if owner and owner[0] in names), None)
        if owner and scope is not None:
            owner = [DEFAULTED if scope[owner[0]] else owner[0] if owner[0] in OWN_OBJECTS else "", *owner[1:]]
        if _class_of_another(owner_node):
            owner = [CLASS_OF_ANOTHER]
        self.stores.append((node, attribute, owner, value))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            self.defined.add(node.name)
            if node.name in HOOKS:
                self.mark(node, f"a class hooked into torch's dispatch ({node.name})")
            if node.returns is not None:
                self._annotation(node.returns)
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = [None] * (len(positional) - len(arguments.defaults)) + arguments.defaults
        self.parameters.append({arg.arg: default is not None and not isinstance(default, ast.Constant) for arg, default
                                in zip([*positional, *arguments.kwonlyargs], [*defaults, *arguments.kw_defaults],
                                       strict=True)})
        self.parameters[-1].update({arg.arg: False for arg in (arguments.vararg, arguments.kwarg) if arg is not None})
        try:
            self.generic_visit(node)
        finally:
            self.parameters.pop()

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.defined.add(node.name)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        if node.annotation is not None:
            self._annotation(node.annotation)
        self.generic_visit(node)

    def _annotation(self, annotation: ast.AST) -> None:
        """Each string in an annotation, which typing's hints, inspect and jaxtyping evaluate: read as the code it
        would be, and marked where it is more than a type (`"f(__import__('x'))"`)."""
        if isinstance(annotation, (ast.Name, ast.Attribute)):
            return  # `int`, `torch.Tensor`: no string in it (the common case, walked for nothing)
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.covered:
                self.covered.add(id(node))  # a jaxtyping type in an annotation is read once, not again as a subscript
                self._annotation_text(node, node.value)

    def _annotation_text(self, node: ast.AST, text: str) -> None:
        for part in type_texts(text):
            tree = parsed_type(part)
            if tree is None:
                continue  # not an expression: nothing evaluates it
            if not is_plain_type(tree):
                self.mark(node, f"code in a string annotation, run where the hints are resolved ({part})")
                continue
            for inner in ast.walk(tree):
                ast.copy_location(inner, node)
                if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
                    self._annotation_text(node, inner.value)  # list["..."]: a forward reference in one
            self.visit(tree)  # read as code is ("torch._C.Generator")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        if isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(key, ast.Constant) and isinstance(key.value, str) \
                and not _private(key.value) and key.value not in ATTRIBUTES | SYS_ATTRIBUTES:
            self.own_writes.add(id(node.value))  # `x.__dict__["w"] = v`: a write by a public name
        if isinstance(key, ast.Slice):
            self._folded(node)
        elif self._resolved(node.value)[:1] == ["jaxtyping"]:  # `isinstance(x, Float[T, "..."])`: sizes evaluated
            self._annotation(key)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "update":
            self.own_writes.add(id(node.func.value))  # `x.__dict__.update(...)`: writes only
        if isinstance(node.func, ast.Name):
            self.called.add(id(node.func))
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name in CALLS and isinstance(node.func, ast.Name):
            self.mark(node, CALLS[name])
        elif name in NAMED_BY_TEXT and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            text = node.args[1]
            if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
                if name != "hasattr":  # a bool reaches nothing
                    self.mark(node, f"an attribute named at run time ({name})")
            elif _private(text.value) or text.value in ATTRIBUTES:
                self.mark(node, f"a private name ({name} {text.value!r})")
            elif (owner := self._resolved(node.args[0])) and MODULES.get(full := ".".join([*owner, text.value])):
                self.mark(node, MODULES[full])  # getattr(timeit, "Timer") is timeit.Timer
            elif name in ("setattr", "delattr"):  # checked as `x.name = value` and `del x.name` are
                self._store(node, text.value, node.args[0], node.args[2] if len(node.args) > 2 else None)
        elif isinstance(node.func, ast.Attribute) and name in ("join", "format", "replace"):
            self._folded(node)
        for keyword in node.keywords:
            if keyword.arg is None and name in PICKLE_LOADS:  # `load(p, **options)`: any of them, unseen
                self.mark(node, "a load given options by a dict (weights_only or allow_pickle unseen)")
            elif keyword.arg == "weights_only" and not (isinstance(keyword.value, ast.Constant)
                                                        and keyword.value.value):
                self.mark(node, "a checkpoint loaded with pickle's full powers (weights_only not True)")
            elif keyword.arg == "allow_pickle" and not (isinstance(keyword.value, ast.Constant)
                                                        and keyword.value.value is False):
                self.mark(node, "an array file loaded with pickle's powers (allow_pickle)")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "__builtins__":
            self.mark(node, "the builtins (__builtins__)")
        elif isinstance(node.ctx, ast.Load) and id(node) not in self.called and \
                (node.id in CALLS or node.id in NAMED_BY_TEXT - {"hasattr"}):
            self.mark(node, f"{node.id} passed as a value (called where it stands, it would be read)")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self._text(node, node.value)
        elif isinstance(node.value, bytes):  # b"adapters.strides".decode()
            self._text(node, node.value.decode("latin-1"))

    def _text(self, node: ast.AST, text: str) -> None:
        """The marks of a string, written out or folded from pieces."""
        if text in HOOKS:  # type("T", bases, {"__torch_dispatch__": ...})
            self.mark(node, f"a class hooked into torch's dispatch ({text})")
        elif (name := grader_name_in(text, GRADER_MODULES)) is not None:  # import_module("adapters.strides")
            self.mark(node, f"the grader's own code named in text ({name})")
        elif "{" in text and (name := _format_field_reaching(text)) is not None:
            self.mark(node, f"{name} named in a format string's field")

    def _folded(self, node: ast.AST) -> None:
        """A string built from pieces (`"adapter" + "s.strides"`, `"".join([...])`, an f-string) is read as
        the text it builds, once for the whole expression."""
        if id(node) not in self.covered and (text := folded(node, self.covered)) is not None:
            self._text(node, text)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, (ast.Add, ast.Mod, ast.Mult)):
            self._folded(node)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._folded(node)
        self.generic_visit(node)

    def finish(self) -> None:
        """The checks of the attributes the code sets or deletes, once every import, alias and function of
        the file is known (a function may set one through a name the module binds below it)."""
        for node, attribute, owner, value in self.stores:
            own = owner is not None and len(owner) == 1 and owner[0] in OWN_OBJECTS
            full = ".".join([self.aliases.get(owner[0], owner[0]), *owner[1:], attribute]) if owner else attribute
            if attribute.startswith("__") and attribute.endswith("__") and attribute not in SETTABLE_DUNDERS \
                    and not own:
                self.mark(node, f"a special attribute of another object set ({attribute})")
            elif owner and (owner[0] in self.imported or owner[0] in (DEFAULTED, CLASS_OF_ANOTHER)) and \
                    not full.startswith(SETTINGS_PREFIXES):
                self.mark(node, f"an attribute of an imported module or class set ({full})")
            elif value is not None and not own and self._hands_over_code(value):
                self.mark(node, f"a function or class of this file set on another object ({attribute})")

    def _hands_over_code(self, value: ast.AST) -> bool:
        """Whether `value` is, or holds, a function or class itself (a lambda, or a def's or class's name neither
        called nor only described): set on another object, it replaces what that object's users call."""
        called = {id(node.func) for node in ast.walk(value) if isinstance(node, ast.Call)}
        called |= {id(node.value) for node in ast.walk(value) if isinstance(node, ast.Attribute)
                   and node.attr in DESCRIPTIONS}
        return any(isinstance(node, ast.Lambda) or (isinstance(node, ast.Name) and node.id in self.defined
                                                    and id(node) not in called) for node in ast.walk(value))


def _format_field_reaching(text: str) -> str | None:
    """The first attribute or key a format string's fields name (`"{0.f_back}"`, `"{0.modules[gc]}"`) that
    leads to frames, the import system or a private name, as the scan's attributes do; None if none."""
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(text) if field]
        for field in fields:
            _, rest = _string.formatter_field_name_split(field)
            for _, name in rest:
                if isinstance(name, str) and (_private(name) or name in ATTRIBUTES or name in SYS_ATTRIBUTES):
                    return name
    except ValueError:  # not a format string: nothing is looked up
        return None
    return None


def marks_in(source: bytes | str, file: str) -> list[Mark]:
    """The marks in one file's `source` (named `file` in them): bytes are decoded as Python decodes a
    file it imports, by its coding line (a file in UTF-7 reads `+AF8-C` as `_C`)."""
    try:
        tree = ast.parse(source, filename=file)
    except (SyntaxError, ValueError, UnicodeError, LookupError) as error:
        # Python's importer fails on it too, unless the code first registers a codec the file names (or
        # reads it as text and runs it some other way): a person reads it.
        return [Mark(file, getattr(error, "lineno", 0) or 0, f"a file the grader cannot read as Python "
                                                              f"({type(error).__name__}: {error})")]
    except (RecursionError, MemoryError):
        return [Mark(file, 0, "code nested too deeply for the grader to read")]
    look = _Look(file)
    try:
        look.visit(tree)
        look.finish()
    except RecursionError:
        return [*look.marks, Mark(file, 0, "code nested too deeply for the grader to read")]
    by_line = {}
    for mark in look.marks:  # those `finish` found came last: one a line, in line order
        by_line.setdefault(mark.line, mark)
    return sorted(by_line.values(), key=lambda mark: mark.line)


def find(package: Path) -> list[Mark]:
    """Every mark in the `.py` files below `package` (a submission's laid-out package), in file and
    line order; at most MOST_MARKS (the last then says how many were left out)."""
    marks: list[Mark] = []
    for path in sorted(package.rglob("*")):  # an extension module imports as a .py does, and runs C
        if path.is_file() and (path.name.endswith(COMPILED) or ".so." in path.name):
            marks.append(Mark(path.relative_to(package).as_posix(), 0, "compiled code (an extension module or "
                                                                       "library) in the upload"))
    read = 0
    for path in sorted(package.rglob("*.py")):
        if not path.is_file() or path.is_symlink():
            continue
        name, size = path.relative_to(package).as_posix(), path.stat().st_size
        if size > MOST_BYTES:
            marks.append(Mark(name, 0, f"a file over {MOST_BYTES >> 20} MiB, too large for the grader to read"))
            continue
        if read + size > MOST_TOTAL_BYTES:
            marks.append(Mark(name, 0, f"not read: the upload's Python files pass the {MOST_TOTAL_BYTES >> 20} MiB "
                                       f"the grader reads"))
            continue
        read += size
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

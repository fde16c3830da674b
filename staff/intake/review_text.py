"""Text in a submission's code that the review scan (review_marks) reads as more than a value: a grader module
named inside a longer string or built from pieces, and string annotations, which typing's hints, inspect and
jaxtyping evaluate as code.

Pure functions of the syntax tree and the text; the scan decides what each finding marks.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator

UNKNOWN = "_"  # a part computed at run time, read as an identifier's letter: "adapters." + name is a dotted name
MOST_FOLDED = 1 << 16  # characters of text folded from pieces; a longer one (`"a" * 10**9`) is not built
MOST_FOLD_DEPTH = 32  # pieces nested in pieces (a join of a format of a join...), past which the text is unknown
# What a type written as text may hold and still be only a type: names, dotted names, subscripts, `|` unions,
# constants (None, Literal's values), and the arithmetic of jaxtyping's symbolic sizes ("n-1").
PLAIN_TYPE_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant,
                    ast.Starred, ast.BinOp, ast.UnaryOp, ast.expr_context, ast.BitOr, ast.Add, ast.Sub, ast.Mult,
                    ast.Div, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd)
JAXTYPING_PREFIXES = "#*_?"  # an axis's modifiers, before the size jaxtyping reads (and may evaluate)
# What follows a name's dot in a file's name ("worker.py", "tests.txt"): no module of the grader's is so named.
FILE_SUFFIXES = "py|pyc|txt|json|csv|npy|npz|pt|pth|bin|log|md|toml|yaml|yml|pkl|png|jpg"
_PERCENT_FIELD = re.compile(r"%(?:%|s|[^a-zA-Z%]*[a-zA-Z])")


def grader_name_in(text: str, tops: frozenset[str]) -> str | None:
    """The first grader module `text` names: a dotted name below one of `tops` anywhere in it ("x adapters.strides",
    "__import__('adapters.flops')"), one of `tops` quoted inside it ("__import__('adapters', ...)"), or the whole
    text "adapters"; None if none. A top as a word ("the adapters call this", "tests and staff") and a file's name
    ("worker.py", FILE_SUFFIXES) name nothing."""
    if text == "adapters":
        return text
    found = _grader_pattern(tops).search(text)
    return None if found is None else found.group(0).strip("'\"")


_PATTERNS: dict[frozenset[str], re.Pattern[str]] = {}


def _grader_pattern(tops: frozenset[str]) -> re.Pattern[str]:
    if tops not in _PATTERNS:
        names = "|".join(re.escape(top) for top in sorted(tops))
        _PATTERNS[tops] = re.compile(rf"(?<![\w.])(?:{names})\.(?!(?:{FILE_SUFFIXES})(?!\w))[^\W\d]\w*"
                                     rf"|(['\"])(?:{names})\1")
    return _PATTERNS[tops]


def folded(node: ast.AST, covered: set[int], depth: int = 0) -> str | None:
    """The text `node` builds from string constants (`+`, `%`, `*`, f-strings, `sep.join([...])`, `.format(...)`,
    `.replace(...)`, slices), each part computed at run time read as UNKNOWN; None where `node` is no such text.
    Every node folded into the text is added to `covered`, so a chain is folded once, not again at each link."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if depth > MOST_FOLD_DEPTH:
        return None
    text = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        operands = []
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # a long chain, walked without recursion
            covered.add(id(node))
            operands.append(node.right)
            node = node.left
        parts = [folded(operand, covered, depth + 1) for operand in [node, *reversed(operands)]]
        if any(part is not None for part in parts):
            text = "".join(UNKNOWN if part is None else part for part in parts)
    elif isinstance(node, ast.JoinedStr):
        text = "".join(_field(value, covered, depth) for value in node.values)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        template = folded(node.left, covered, depth + 1)
        if template is not None:
            values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            texts = iter([folded(value, covered, depth + 1) for value in values])
            text = _PERCENT_FIELD.sub(lambda field: _percent_field(field.group(0), texts), template)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text = _repeated(node, covered, depth)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        text = _method(node, covered, depth)
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        text = _sliced(node, covered, depth)
    if text is not None:
        covered.add(id(node))
    return None if text is None or len(text) > MOST_FOLDED else text


def _field(value: ast.AST, covered: set[int], depth: int) -> str:
    """One part of an f-string as text: a constant, or a field whose value folds (as its conversion shows it)."""
    if not isinstance(value, ast.FormattedValue):
        return folded(value, covered, depth + 1) or ""
    text = folded(value.value, covered, depth + 1)
    if text is None or value.format_spec is not None:
        return UNKNOWN
    return {-1: text, 115: text, 114: repr(text), 97: ascii(text)}.get(value.conversion, UNKNOWN)


def _percent_field(field: str, texts: Iterator[str | None]) -> str:
    """What one `%` field of a template shows: `%%` a percent sign, `%s` its value's text, any other UNKNOWN."""
    if field == "%%":
        return "%"
    text = next(texts, None)
    return text if field == "%s" and text is not None else UNKNOWN


def _repeated(node: ast.BinOp, covered: set[int], depth: int) -> str | None:
    """`text * n` or `n * text`, where n is a written-out count small enough to build."""
    for text_node, count_node in ((node.left, node.right), (node.right, node.left)):
        text = folded(text_node, covered, depth + 1)
        count = count_node.value if isinstance(count_node, ast.Constant) else None
        if text is not None:
            if isinstance(count, int) and not isinstance(count, bool) and len(text) * max(count, 0) <= MOST_FOLDED:
                return text * count
            return text + UNKNOWN
    return None


def _method(node: ast.Call, covered: set[int], depth: int) -> str | None:
    """`sep.join([...])`, `template.format(...)` and `text.replace(old, new)` on folded text."""
    owner = folded(node.func.value, covered, depth + 1)
    if owner is None or node.func.attr not in ("join", "format", "replace"):
        return None
    args = [_or_unknown(folded(arg, covered, depth + 1)) for arg in node.args]
    if node.func.attr == "join":
        items = node.args[0] if len(node.args) == 1 else None
        if not isinstance(items, (ast.List, ast.Tuple)):
            return UNKNOWN
        return owner.join(_or_unknown(folded(item, covered, depth + 1)) for item in items.elts)
    if node.func.attr == "replace":
        if len(args) != 2 or len(owner) * max(len(args[1]), 1) > MOST_FOLDED:
            return UNKNOWN
        return owner.replace(args[0], args[1])
    named = {keyword.arg: _or_unknown(folded(keyword.value, covered, depth + 1)) for keyword in node.keywords
             if keyword.arg}
    return _formatted(owner, args, named)


def _or_unknown(text: str | None) -> str:
    return UNKNOWN if text is None else text


def _formatted(template: str, args: list[str], named: dict[str, str]) -> str:
    """`template.format(*args, **named)` with fields by position or name only: any other field (`{0.x}`, a spec)
    is UNKNOWN, as is a template that is no format string."""
    out, auto = [], 0
    try:
        for literal, field, spec, conversion in string.Formatter().parse(template):
            out.append(literal)
            if field is None:
                continue
            if field == "":
                field, auto = str(auto), auto + 1
            value = args[int(field)] if field.isdigit() and int(field) < len(args) else named.get(field)
            out.append(UNKNOWN if value is None or spec or conversion else value)
    except ValueError:
        return UNKNOWN
    return "".join(out)


def _sliced(node: ast.Subscript, covered: set[int], depth: int) -> str | None:
    """`text[a:b:c]` with written-out bounds (`"sretpada"[::-1]`)."""
    text = folded(node.value, covered, depth + 1)
    if text is None:
        return None
    try:
        bounds = [None if part is None else ast.literal_eval(part)
                  for part in (node.slice.lower, node.slice.upper, node.slice.step)]
        return text[slice(*bounds)]
    except (ValueError, TypeError, SyntaxError):
        return UNKNOWN


def type_texts(text: str) -> set[str]:
    """The parts of an annotation's string that something may evaluate as code and that are more than a name or a
    number: the whole (typing's forward reference, inspect's eval_str) and each of its words less jaxtyping's
    modifiers (a symbolic axis size). Words that are all names and numbers ("batch d_model", "... d") make no code
    together (no call, attribute or subscript without punctuation), and a parse of each cost the scan half again
    its time."""
    words = set()
    for word in text.split():
        word = word.lstrip(JAXTYPING_PREFIXES)
        words.add(word.split("=")[1] if word.count("=") == 1 else word)
    words -= {word for word in words if word.isidentifier() or word.isdigit() or word in ("", "...")}
    return {text.strip(), *words} if words else set()


def parsed_type(text: str) -> ast.Expression | None:
    """`text` parsed as an expression, or None where it is not one (then nothing can evaluate it)."""
    try:
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def is_plain_type(tree: ast.Expression) -> bool:
    """Whether a parsed annotation is only a type (PLAIN_TYPE_NODES): no call, lambda, comprehension or
    assignment, which would be code run where typing resolves the hint."""
    return all(isinstance(node, PLAIN_TYPE_NODES) for node in ast.walk(tree))

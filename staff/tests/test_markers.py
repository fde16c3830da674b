"""Solution markers: the reference tree is well-formed, stubs keep everything else, bad markers are caught."""

from __future__ import annotations

import ast

import pytest

from staff.grade import REPO_ROOT
from staff.markers import BEGIN, END, MarkerError, find_blocks, stub_source

MODULES = sorted((REPO_ROOT / "cs336_basics").glob("*.py"))


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_reference_stubs_compile_and_keep_the_outside_verbatim(module):
    source = module.read_text()
    blocks = find_blocks(source, module)
    stubbed = stub_source(source, module)
    ast.parse(stubbed)
    inside = {i for b in blocks for i in range(b.begin, b.end + 1)}
    outside = [line for i, line in enumerate(source.splitlines()) if i not in inside]
    kept = [line for line in stubbed.splitlines() if "raise NotImplementedError(" not in line]
    assert kept == outside
    for block in blocks:
        assert f"{block.function} is not implemented yet (see handout/" in stubbed


# Helpers students are given, deliberately outside any solution block.
PROVIDED = {"exponent_bias"}


def test_every_public_function_with_a_body_has_a_solution_block():
    for module in MODULES:
        tree = ast.parse(module.read_text())
        functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
        solved = {block.function for block in find_blocks(module.read_text(), module)}
        missing = functions - solved - PROVIDED
        assert not missing, f"{module.name}: no solution markers in {sorted(missing)}; the reference would ship"


BAD = {
    "unbalanced BEGIN": f"def f():\n    {BEGIN}\n    return 1\n",
    "END without BEGIN": f"def f():\n    return 1\n    {END}\n",
    "nested": f"def f():\n    {BEGIN}\n    {BEGIN}\n    return 1\n    {END}\n    {END}\n",
    "spans two functions": f"def f():\n    {BEGIN}\n    return 1\n\ndef g():\n    return 2\n    {END}\n",
    "empty body": f"def f():\n    {BEGIN}\n\n    {END}\n",
    "outside a function": f"{BEGIN}\nx = 1\n{END}\n",
    "END indented differently": f"def f():\n    {BEGIN}\n    return 1\n  {END}\n",
}


@pytest.mark.parametrize("case", BAD)
def test_malformed_markers_are_reported_with_file_and_line(case):
    with pytest.raises(MarkerError, match=r"^bad\.py:\d+: "):
        find_blocks(BAD[case], "bad.py")


def test_nested_helper_inside_a_block_is_allowed():
    source = f"def f():\n    {BEGIN}\n    def helper():\n        return 1\n    return helper()\n    {END}\n"
    assert [b.function for b in find_blocks(source)] == ["f"]

"""Solution markers: the reference tree is well-formed, stubs keep everything else, bad markers are caught."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from staff.grading.grade import REPO_ROOT
from staff.sources.markers import BEGIN, END, MarkerError, find_blocks, handout_page, stub_source
from staff.sources.sections import SectionError, SectionIndex

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
        assert f"{block.qualname} is not implemented yet (see handout/" in stubbed


# Helpers students are given, deliberately outside any solution block.
PROVIDED = {"exponent_bias", "checkpoint_path"}


def test_every_public_function_with_a_body_has_a_solution_block():
    for module in MODULES:
        tree = ast.parse(module.read_text())
        functions = {node.name for node in tree.body
                     if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}
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


MORE_BAD = {
    "BEGIN after a function ends": f"def f():\n    return 1\n{BEGIN}\nx = 1\n{END}\n",
    "BEGIN in a class body": f"class C:\n    {BEGIN}\n    x = 1\n    {END}\n",
    "runs into a class": f"def f():\n    {BEGIN}\n    return 1\nclass C:\n    x = 1\n    {END}\n",
    "method runs into the next method": f"class C:\n    def f(self):\n        {BEGIN}\n        return 1\n\n"
                                        f"    def g(self):\n        {END}\n",
}


@pytest.mark.parametrize("case", MORE_BAD)
def test_markers_outside_one_function_are_reported(case):
    with pytest.raises(MarkerError, match=r"^bad\.py:\d+: "):
        find_blocks(MORE_BAD[case], "bad.py")


METHODS = f'''"""A module.

Handout: handout/07_model.md.
"""


class Model:
    def __init__(self):
        {BEGIN}
        self.x = 1
        {END}

    def forward(self, x):
        {BEGIN}
        return x
        {END}


def helper():
    {BEGIN}
    return 2
    {END}
'''


def test_methods_are_named_with_their_class():
    blocks = find_blocks(METHODS)
    assert [(b.function, b.qualname, b.owner) for b in blocks] == [
        ("__init__", "Model.__init__", "Model"), ("forward", "Model.forward", "Model"), ("helper", "helper", "helper")
    ]


def test_stub_names_the_function_page_and_section_and_keeps_crlf():
    stubbed = stub_source(METHODS.replace("\n", "\r\n"), "m.py", section=lambda block: f"§7.{block.begin}")
    lines = stubbed.split("\r\n")
    forward = "Model.forward is not implemented yet (see handout/07_model.md §7.13)"
    assert f"        raise NotImplementedError('{forward}')" in lines
    assert "    raise NotImplementedError('helper is not implemented yet (see handout/07_model.md §7.19)')" in lines
    assert "\n" not in stubbed.replace("\r\n", "")  # every line keeps the file's own line ending
    namespace: dict = {}
    exec(compile(stubbed, "m.py", "exec"), namespace)
    with pytest.raises(NotImplementedError, match=r"^Model\.__init__ is not implemented yet"):
        namespace["Model"]()


# ---- handout sections for the stubs (staff/sources/sections.py) ----

@pytest.fixture(scope="module")
def reference_sections():
    index = SectionIndex(REPO_ROOT)
    found = {}
    for module in MODULES:
        source = module.read_text()
        for block in find_blocks(source, module):
            found[(module.name, block.qualname)] = index.section(module.relative_to(REPO_ROOT), source, block)
    return found


def test_every_reference_block_has_a_section_of_its_own_page(reference_sections):
    for (module, qualname), section in reference_sections.items():
        page = handout_page((REPO_ROOT / "cs336_basics" / module).read_text())
        assert re.search(rf"^## {re.escape(section[1:])} ", (REPO_ROOT / page).read_text(), re.MULTILINE), \
            (module, qualname, section)


def test_sections_of_known_functions(reference_sections):
    # Sections the handout pages of problems 1-4 state for these functions.
    assert reference_sections[("strides.py", "materialize")] == "§2.6"
    assert reference_sections[("strides.py", "shares_storage")] == "§2.4"
    assert reference_sections[("dtype_memory.py", "decode_float_bits")] == "§1.2"
    assert reference_sections[("flops.py", "mfu")] == "§4.3"
    # Cited by tests of an earlier section too, but specified in a later one that names them.
    assert reference_sections[("init.py", "trunc_normal_init")] == "§6.2"
    assert reference_sections[("model.py", "num_parameters")] == "§7.3"
    # Mistakes these catch: the GPU test's section (§1.6, cited beside §1.1) taken for tensor_bytes, and a
    # method placed by its own name (`forward`, named in §7.1 for Linear) rather than its class's section.
    assert reference_sections[("dtype_memory.py", "tensor_bytes")] == "§1.1"
    assert reference_sections[("model.py", "Cruncher.forward")] == "§7.2"
    assert reference_sections[("model.py", "Linear.forward")] == "§7.1"


def write_tree(root: Path, test_body: str, page_extra: str = "") -> Path:
    """A minimal tree: one module with one function and one method, its page, an adapter and a test."""
    (root / "cs336_basics").mkdir()
    (root / "adapters").mkdir()
    (root / "tests").mkdir()
    (root / "handout").mkdir()
    module = root / "cs336_basics" / "toy.py"
    module.write_text(f'"""Toy.\n\nHandout: handout/01_toy.md.\n"""\n\n\ndef f():\n    {BEGIN}\n    return 1\n'
                      f"    {END}\n\n\nclass Box:\n    def open(self):\n        {BEGIN}\n        return 2\n"
                      f"        {END}\n")
    (root / "adapters" / "toy.py").write_text(
        "def _make():\n    from cs336_basics import toy as t\n\n    return t.f()\n\n\n"
        "def run_f():\n    return _make()\n"
    )
    (root / "tests" / "test_01_toy.py").write_text(f'from adapters import toy as A\n\nSEE = "handout/01_toy.md"\n\n\n'
                                                   f"def test_f():\n{test_body}\n")
    (root / "handout" / "01_toy.md").write_text(f"# Problem 1: Toy (1 points)\n\n## 1.1 Start\n\nText.\n\n"
                                                f"## 1.2 Then\n\nMore.\n{page_extra}\n## Tests\n\n`f` `Box`\n")
    return module


def sections_of(root: Path, module: Path) -> dict[str, str]:
    index, source = SectionIndex(root), module.read_text()
    found = {}
    for block in find_blocks(source, module):
        try:
            found[block.qualname] = index.section(module.relative_to(root), source, block)
        except SectionError as error:
            found[block.qualname] = str(error)
    return found


def test_section_comes_from_the_tests_first_then_from_backticks(tmp_path):
    body = '    assert A.run_f() == 1, f"{SEE} §1.2"'
    module = write_tree(tmp_path, body, page_extra="\nA `f` here, and `Box.open` too.\n")
    assert sections_of(tmp_path, module) == {"f": "§1.2", "Box.open": "§1.2"}
    (tmp_path / "handout" / "01_toy.md").write_text(
        "# Problem 1: Toy (1 points)\n\n## 1.1 Start\n\n`Box(size)` and `f()`\n\n## 1.2 Then\n\n"
    )
    assert sections_of(tmp_path, module) == {"f": "§1.2", "Box.open": "§1.1"}


def test_of_several_cited_sections_the_lowest_wins(tmp_path):
    body = '    assert A.run_f() == 1, f"{SEE} §1.2"\n\n\ndef test_f_again():\n    assert A.run_f(), f"{SEE} §1.1"'
    module = write_tree(tmp_path, body)
    assert sections_of(tmp_path, module)["f"] == "§1.1"


def test_of_several_cited_sections_one_naming_the_function_wins(tmp_path):
    body = '    assert A.run_f() == 1, f"{SEE} §1.2"\n\n\ndef test_f_again():\n    assert A.run_f(), f"{SEE} §1.1"'
    module = write_tree(tmp_path, body, page_extra="\nHere `f` is specified.\n")
    assert sections_of(tmp_path, module)["f"] == "§1.2"


def test_a_block_with_no_section_is_an_error_naming_it(tmp_path):
    module = write_tree(tmp_path, "    assert A.run_f() == 1")  # the test cites no section
    found = sections_of(tmp_path, module)
    assert found["Box.open"].startswith("cs336_basics/toy.py:15: Box.open has no handout section")
    assert "has no handout section" in found["f"] and "`f`" in found["f"]
    (tmp_path / "handout" / "01_toy.md").unlink()
    assert "handout/01_toy.md, which does not exist" in sections_of(tmp_path, module)["f"]

"""`staff validate --mutants`: mutants are keyed by what they change, so equivalent.toml survives edits
elsewhere in a module, and a listed mutant whose line was edited is reported, not silently dropped."""

from __future__ import annotations

from staff.validate.mutants import equivalents, mutants_in, stale_equivalents

SOURCE = '''def scale(x, n):
    # BEGIN SOLUTION
    if n <= 0:
        raise ValueError("n")
    x = x * 2
    x = x * 2
    return x
    # END SOLUTION
'''


def keys(text: str) -> list[str]:
    return [m.key for m in mutants_in(text, 1, "toy")]


def test_a_key_names_the_change_not_its_line():
    # Mistake this catches: keys by line and column, which an edit above un-listed silently.
    assert keys("import math\n\n\n" + SOURCE) == keys(SOURCE)
    assert "toy.scale: `if n <= 0:`: n <= 0 -> n < 0" in keys(SOURCE)


def test_the_same_change_on_two_identical_lines_gets_two_keys():
    # Mistake this catches: two mutants under one key, so excusing one would excuse the other unseen.
    assert len(set(keys(SOURCE))) == len(keys(SOURCE))
    first = "toy.scale: `x = x * 2`: x * 2 -> x / 2"
    assert {first, f"{first} (#2)"} <= set(keys(SOURCE))


def test_every_listed_equivalent_mutant_exists_in_the_reference():
    assert equivalents() and stale_equivalents() == []

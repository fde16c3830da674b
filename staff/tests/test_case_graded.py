"""A red-team case's `graded` problems (staff/redteam/corpus.py) must hold every honest problem and
every problem its attack is in: a case that graded fewer would pass without its attack or its honest
work being graded. An attack in every function ("*") runs in whichever problems are graded, so it
needs one. Mistakes caught: a check that forgets the attacked problems, or lets "*" grade nothing."""

from __future__ import annotations

import pytest

from staff.redteam import corpus


def write_case(root, text: str) -> None:
    (root / "a-case").mkdir()
    (root / "a-case" / "case.toml").write_text('description = "x"\n' + text)


@pytest.mark.parametrize("text", [
    'honest = [1, 2]\ngraded = [1]\n',
    'honest = [1]\ngraded = [1]\nattack_in = ["strides.contiguous_strides"]\n',
    'honest = []\ngraded = []\nattack_in = ["*"]\n',
])
def test_a_case_grading_less_than_it_needs_is_refused(tmp_path, monkeypatch, text):
    monkeypatch.setattr(corpus, "CASES", tmp_path)
    write_case(tmp_path, text)
    with pytest.raises(ValueError, match="'graded' must be"):
        corpus.load_cases()


def test_graded_defaults_to_every_problem_and_takes_a_list(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "CASES", tmp_path)
    write_case(tmp_path, 'honest = [1]\ngraded = [1, 2]\nattack_in = ["strides.contiguous_strides"]\n')
    assert corpus.load_cases()[0].graded == (1, 2)
    (tmp_path / "a-case" / "case.toml").write_text('description = "x"\nhonest = [1]\n')
    assert corpus.load_cases()[0].graded == tuple(corpus.MODULES)
    (tmp_path / "a-case" / "case.toml").write_text('description = "x"\nhonest = []\ngraded = [1, 2]\n'
                                                   'attack_in = ["*"]\n')
    assert corpus.load_cases()[0].graded == (1, 2)

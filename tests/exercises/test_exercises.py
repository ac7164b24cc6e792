"""The exercise checkers (snippets.exercises): each reference answer passes, each plausible wrong answer
fails on the property meant for it (and the report names that property, the smallest input, a hint and
a link to the chapter), and a correct answer written differently passes. The answers live in
tests/exercises/answers_chNN.py: WRONG = {id: [(property key, fn), …]}, RIGHT = {id: [fn, …]}."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from snippets.exercises import core

HERE = Path(__file__).parent
EXERCISES = core.load_all()
ANSWERS = {p.stem.removeprefix("answers_"): importlib.import_module(f"tests.exercises.{p.stem}")
           for p in sorted(HERE.glob("answers_ch*.py"))}
WRONG = [(eid, key, fn) for mod in ANSWERS.values() for eid, pairs in mod.WRONG.items() for key, fn in pairs]
RIGHT = [(eid, fn) for mod in ANSWERS.values() for eid, fns in mod.RIGHT.items() for fn in fns]


@pytest.mark.parametrize("eid", list(EXERCISES))
def test_reference_passes(eid):
    result = core.run(eid, EXERCISES[eid].reference)
    assert result.passed, result.report
    assert result.report.startswith(f"✔ {eid}")
    for prop in EXERCISES[eid].properties:
        assert prop.text in result.report  # a correct answer is told what was checked


@pytest.mark.parametrize("eid, key, fn", WRONG, ids=[f"{e}-{f.__name__}" for e, _, f in WRONG])
def test_wrong_answer_fails_on_its_property(eid, key, fn):
    result = core.run(eid, fn)
    assert result.failed == key, result.report
    prop = next(p for p in EXERCISES[eid].properties if p.key == key)
    report = result.report
    assert report.startswith(f"✘ {eid}") and f"性质：{prop.text}" in report
    assert "最小的失败输入" in report and f"提示：{prop.hint}" in report and f"正文：{prop.url()}" in report


@pytest.mark.parametrize("eid, fn", RIGHT, ids=[f"{e}-{f.__name__}" for e, f in RIGHT])
def test_a_different_correct_answer_passes(eid, fn):
    result = core.run(eid, fn)
    assert result.passed, result.report


def test_every_exercise_has_three_wrong_answers_and_one_other_right_one():
    wrong = {eid: sum(e == eid for e, _, _ in WRONG) for eid in EXERCISES}
    right = {eid: sum(e == eid for e, _ in RIGHT) for eid in EXERCISES}
    assert {e: n for e, n in wrong.items() if n < 3} == {}
    assert {e: n for e, n in right.items() if n < 1} == {}
    assert {e for e, _, _ in WRONG} | {e for e, _ in RIGHT} <= set(EXERCISES)


def test_every_chapter_module_is_registered_and_three_to_five_each():
    chapters = {}
    for eid in EXERCISES:
        chapters.setdefault(eid.split(".")[0], []).append(eid)
    modules = sorted(p.stem for p in (Path(core.__file__).parent).glob("ch*.py"))
    assert sorted(chapters) == modules
    assert {c: len(ids) for c, ids in chapters.items() if not 3 <= len(ids) <= 5} == {}

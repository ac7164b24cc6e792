"""The 「动手练习」 sections and the exercise notebooks say what the checker checks: each chapter's
代码与实验 page ends with the section tools/exercises.py writes from the registry, and each exercise
notebook holds the cells it writes (its stored outputs are checked by tests/site/test_notebooks.py)."""

from __future__ import annotations

import re

import nbformat
import pytest

from snippets.exercises import core
from tools import exercises as gen

CHAPTERS = sorted({e.chapter for e in core.load_all().values()})
FIX = "python -m tools.exercises pages|notebooks {}, then python -m sitebuild.generate.notebooks"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_page_ends_with_the_exercise_section(chapter):
    text = gen.page_for(chapter).read_text(encoding="utf-8")
    assert text.count(gen.HEADING) == 1, FIX.format(chapter)
    assert text.endswith("\n\n" + gen.section(chapter)), FIX.format(chapter)
    for exercise in core.load_all().values():
        if exercise.chapter == chapter:
            assert f"`{exercise.signature}`" in text and f"{{#{gen.anchor(exercise)}}}" in text


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if gen.page_for(c).name == gen.OWN_PAGE
                                     and (gen.chapter_dir(c) / "code.md").is_file()])
def test_a_code_page_whose_exercises_have_their_own_page_lists_them(chapter):
    text = (gen.chapter_dir(chapter) / "code.md").read_text(encoding="utf-8")
    assert text.endswith("\n\n" + gen.pointer_section(chapter)), FIX.format(chapter)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_notebook_holds_a_stub_and_a_check_cell_per_exercise(chapter):
    path = gen.NOTEBOOKS / gen.notebook_name(chapter)
    nb = nbformat.read(path, as_version=4)
    assert [(c.cell_type, c.source) for c in nb.cells] == \
        [(c["cell_type"], c["source"]) for c in gen.notebook_cells(chapter)], FIX.format(chapter)
    checks = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("check(")]
    exercises = [e for e in core.load_all().values() if e.chapter == chapter]
    assert len(checks) == len(exercises) + 1  # one per exercise, and the demonstration
    stored = [c.outputs[0].text for c in checks[1:]]
    assert all("还没有实现" in out for out in stored)  # the stubs as the reader receives them


def test_each_exercise_notebook_is_in_the_nav_after_the_chapter_notebook():
    nav = (gen.ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for chapter in CHAPTERS:
        n = chapter[2:]
        assert re.search(rf"配套 Notebook: notebooks/{chapter}-experiments\.ipynb\n\s+- 第 {n} 章 练习 Notebook: "
                         rf"notebooks/{chapter}-exercises\.ipynb\n", nav), chapter


def test_the_section_links_the_colab_notebook_of_the_release():
    text = gen.section(CHAPTERS[0])
    assert f"]({gen.colab(CHAPTERS[0])})" in text
    assert "/blob/v" in gen.colab(CHAPTERS[0]) and gen.colab(CHAPTERS[0]).endswith(f"/{CHAPTERS[0]}-exercises.ipynb")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_each_practised_question_links_its_exercise(chapter):
    """Under the answer of every interview question an exercise practises, a 「动手练习」 line links it."""
    path = gen.chapter_dir(chapter) / "questions.md"
    text = path.read_text(encoding="utf-8")
    assert gen.with_practice(text, gen.practice_links(chapter)) == text, FIX.format(chapter).replace(
        "pages|notebooks", "questions")
    for exercise in core.load_all().values():
        if exercise.chapter == chapter and exercise.questions:
            assert f"#{gen.anchor(exercise)})" in text


@pytest.mark.parametrize("exercise", sorted(core.load_all()), ids=str)
def test_statements_write_formulas_without_tex_braces(exercise):
    """The texts are shown as plain text on the page and in the terminal: e^{m−m'} or h_{t−1} reach the reader
    with their braces. They are written exp(m − m′), h_(t−1), ∏（i = k+1 … t） instead."""
    e = core.load_all()[exercise]
    texts = [e.statement, e.shapes, e.bad_input] + [t for p in e.properties for t in (p.text, p.hint)]
    assert not [t for t in texts if re.search(r"[_^]\{", t)]

"""Companion notebooks: stored with the outputs of a full run (the pages show them), the stored
outputs still match a fresh execution, and each notebook page links its chapter and its .ipynb."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from sitebuild.generate import notebooks

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs/notebooks").glob("*.ipynb"))
IDS = [p.name for p in NOTEBOOKS]


def test_each_chapter_has_a_notebook():
    names = {p.name for p in NOTEBOOKS}
    assert {"ch01-experiments.ipynb", "ch02-experiments.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_stored_executed_top_to_bottom(path):
    """Every code cell ran once, in order, in one kernel, without an error (python -m sitebuild.generate.notebooks)."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1)), "run python -m sitebuild.generate.notebooks"
    assert [o for c in cells for o in c.outputs if o.get("output_type") == "error"] == []
    assert sum(bool(c.outputs) for c in cells) >= len(cells) // 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_links_its_chapter_and_its_download(path):
    text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    chapter = f"../chapters/{path.name[2:4]}-"
    assert re.search(rf"\]\({re.escape(chapter)}[^)/]+/index\.md\)", text), f"{path.name}: no link to its chapter"
    assert f"]({path.name})" in text, f"{path.name}: no download link to itself"


def test_notebook_pages_show_outputs_and_working_links(built_site):
    for path in NOTEBOOKS:
        page = built_site / "notebooks" / path.stem
        html = (page / "index.html").read_text(encoding="utf-8")
        assert html.count("jp-OutputArea-output") >= 5, f"{path.name}: the page shows no outputs"
        assert f'href="{path.name}" download' in html
        assert (page / path.name).read_bytes() == path.read_bytes()  # include_source: the download exists
        for href in re.findall(r'href="(\.\./\.\./chapters/[^"#]+)"', html):
            assert (page / href / "index.html").resolve().is_file(), href


def test_fresh_outputs_are_compared_with_a_tolerance():
    stored = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("stream", text="差 3.1e-16，范数 7.512e-01 at 0x7f00aa\n")])])
    fresh = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[
        nbformat.v4.new_output("stream", text="差 8.0e-17，范数 7.513e-01 at 0x7f11bb\n")])])
    assert notebooks.differences(stored, fresh) == []
    fresh.cells[0].outputs[0].text = "差 8.0e-17，范数 7.9e-01 at 0x7f11bb\n"
    assert len(notebooks.differences(stored, fresh)) == 1


@pytest.mark.slow  # starts a Jupyter kernel per notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_outputs_match_a_fresh_execution(path):
    stored = nbformat.read(path, as_version=4)
    fresh = notebooks.execute(path)
    assert notebooks.differences(stored, fresh) == []


def test_header_links_the_repository_without_fetching_its_facts(built_site):
    """repo_url is set; Material's source component (stars/forks from api.github.com) is not mounted."""
    html = (built_site / "notebooks/ch01-experiments/index.html").read_text(encoding="utf-8")
    assert 'href="https://github.com/transformer-paper-reading/transformer-paper-reading"' in html
    assert 'data-md-component="source"' not in html


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_prose_follows_the_site_style(path):
    """The Markdown cells are reader prose too: chosen terms only (glossary 用词统一), 「」 quotes."""
    from tests.site.test_terms import choices, prose, quoted_in_prose, variant_pattern

    text = "\n\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    rows = choices()
    body = prose(text, [word for word, _ in rows])
    variants = [v for _, vs in rows for v in vs if variant_pattern(v).search(body)]
    assert variants == [] and quoted_in_prose(text) == []

"""Companion notebooks: stored with the outputs of a full run (the pages show them), the stored
outputs still match a fresh execution, and each notebook page links its chapter and its .ipynb.
Each opens in Colab and installs the reader code (the snippets package, at the release tag) in its
first code cell; a slow test runs each in a fresh virtual environment that has only that package."""

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
    assert {f"ch{n:02d}-experiments.ipynb" for n in range(1, 14)} <= names


def _release() -> tuple[str, str]:
    """(owner/name of the repository, the release tag of this version): mkdocs.yml's repo_url, pyproject's version."""
    import tomllib

    import yaml

    repo = yaml.safe_load(re.sub(r"!!python\S*|!ENV", "", (ROOT / "mkdocs.yml").read_text(encoding="utf-8")))["repo_url"]
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return repo.removeprefix("https://github.com/"), f"v{version}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_opens_in_colab_and_installs_the_reader_code_first(path):
    """An 'Open in Colab' link to this notebook at the release tag (a text link: no remote badge
    image), and a first code cell that installs the snippets package from the repository at
    that tag when it is not importable (in Colab, in a reader's Jupyter), and does nothing in the repository."""
    repo, tag = _release()
    nb = nbformat.read(path, as_version=4)
    intro = nb.cells[0].source
    colab = f"https://colab.research.google.com/github/{repo}/blob/{tag}/docs/notebooks/{path.name}"
    assert f"]({colab})" in intro, f"{path.name}: no Colab link {colab}"
    every = "\n".join(c.source for c in nb.cells)
    assert not re.search(r"!\[[^\]]*\]\(https?://|<img[^>]*src=\"https?://", every), "a remote image"
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert 'importlib.util.find_spec("snippets") is None' in first.source
    assert f'"git+https://github.com/{repo}@{tag}"' in first.source
    assert "snippets" not in "".join(o.get("text", "") for o in first.get("outputs", []))  # nothing ran here


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_code_cells_that_draw_have_alt_text(path):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code" and "plt.show()" in cell.source:
            assert len(cell.metadata.get("alt", "")) >= 20, cell.source[:80]


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


# --- a fresh virtual environment with only the installed package ---------------------------

RUN_NOTEBOOK = """
import sys, nbclient, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
for cell in nb.cells:
    if cell.cell_type == "code":
        cell.outputs, cell.execution_count = [], None
nb.cells.append(nbformat.v4.new_code_cell("import snippets, sys; print('SNIPPETS', snippets.__file__); print('PYTHON', sys.executable)"))
nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "."}}).execute()
# every output of the cell: a late stderr line of an earlier cell (a warning, a cache notice) may come first
print("".join(out.get("text", "") for out in nb.cells[-1].outputs))
"""


@pytest.fixture(scope="session")
def package_venv(tmp_path_factory):
    """A virtual environment without the repository on its path: the wheel built from this tree
    installed into it (no dependencies), and the pinned environment's libraries (torch,
    matplotlib, ipykernel, nbclient) visible as a plain path entry, so that the editable install
    of the repository there (a .pth file) is not processed."""
    import site
    import subprocess
    import sys

    import shutil

    tmp = tmp_path_factory.mktemp("venv")
    # built from a copy of what the wheel holds: setuptools writes build/ and *.egg-info next to its source
    src, wheels = tmp / "src", tmp / "wheels"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    for package in ("snippets", "sitebuild"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(src)], check=True, capture_output=True, timeout=600)
    wheel = next(wheels.glob("transformer_paper_verified-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "pinned-environment.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp), "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    probe = [str(python), "-c", "import importlib.util; print(importlib.util.find_spec('snippets'))"]
    before = subprocess.run(probe, capture_output=True, text=True, cwd=tmp, env=env, check=True).stdout.strip()
    assert before == "None", f"the fresh environment already sees the repository: {before}"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(purelib),
                    str(wheel)], check=True, capture_output=True, timeout=600)
    return python, env, tmp


@pytest.mark.slow  # builds a wheel, then one kernel per notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs_with_only_the_installed_package(path, package_venv, tmp_path):
    """What a reader's Jupyter does with the downloaded .ipynb: the notebook, alone in a folder,
    runs top to bottom with the snippets package the wheel installed (its first cell finds it and
    installs nothing; the environment has no pip, so a cell that tried to would fail)."""
    import shutil
    import subprocess

    python, env, _ = package_venv
    work = tmp_path / "reader"
    work.mkdir()
    shutil.copy(path, work / path.name)
    proc = subprocess.run([str(python), "-c", RUN_NOTEBOOK, path.name], capture_output=True, text=True, cwd=work,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = re.search(r"SNIPPETS (\S+)", proc.stdout)
    assert found, proc.stdout[-2000:]
    where = found.group(1)
    assert str(python.parent.parent) in where and str(ROOT) not in where, where

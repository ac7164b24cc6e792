"""What a reader copies from a page runs, and a page never holds a pasted copy of snippet code.

For every page, the sections it includes from snippets/ (following nested includes of other
markdown files) are concatenated in order and run in a fresh interpreter, in a temporary
directory, with ``import snippets`` blocked. And no code fence on any page repeats lines of a
snippet section: code is included with ``--8<--``, never pasted.
"""

from __future__ import annotations

import re

import pytest

from pytest_codeblocks.main import extract_from_file

from tests.support.codeblocks import included_modules
from tests.support.copyrun import run_fresh_each
from tests.support.sections import DOCS, ROOT, page_code_includes, pages_with_code, parse_sections, section

PAGES = pages_with_code()
FENCE = re.compile(r"^(\s*)```(?:python|py)\b[^\n]*\n(.*?)^\1```", re.M | re.S)
PASTE_RUN = 4  # this many consecutive non-trivial lines of a section, found in a page fence, is a paste


@pytest.mark.slow  # every page's code in a fresh interpreter
def test_page_code_runs_by_itself(tmp_path):
    """Every page's includes, in page order, as one program each (one interpreter, a namespace per page)."""
    programs = {}
    for page in PAGES:
        includes = page_code_includes(page)
        label = page.relative_to(DOCS).as_posix()
        # Only whole-section includes are runnable programs; a page must not include a
        # section twice (it would show the reader the same code twice).
        assert all(name for _, name in includes), f"{label}: include named sections, not whole modules"
        assert len(set(includes)) == len(includes), f"{label}: a section is included twice"
        programs[label] = "\n\n".join(section(path, name) for path, name in includes)
    assert len(programs) >= 4  # chapters 01, 02, 03, 05 at least
    run_fresh_each(programs, tmp_path)


def _significant(lines):
    return [ln.strip() for ln in lines if len(ln.strip()) > 12 and not ln.strip().startswith("#")]


def pasted_runs(pages, modules) -> list[str]:
    """Fences on pages that repeat PASTE_RUN consecutive significant lines of some snippet section."""
    runs = {}
    for module in modules:
        for name, code in parse_sections(module):
            lines = _significant(code.splitlines())
            for i in range(len(lines) - PASTE_RUN + 1):
                runs[tuple(lines[i:i + PASTE_RUN])] = f"{module.relative_to(ROOT)}:{name}"
    found = []
    for page in pages:
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            lines = _significant(m.group(2).splitlines())
            for i in range(len(lines) - PASTE_RUN + 1):
                if tuple(lines[i:i + PASTE_RUN]) in runs:
                    found.append(f"{page.name} pastes {runs[tuple(lines[i:i + PASTE_RUN])]}")
                    break
    return found


def test_no_page_pastes_snippet_code():
    modules = sorted((ROOT / "snippets").glob("*.py"))
    pages = [p for p in DOCS.rglob("*.md") if "generated" not in p.parts]
    assert pasted_runs(pages, modules) == []


def test_the_paste_detector_finds_a_paste(tmp_path):
    module = ROOT / "snippets" / "attention.py"
    name, code = parse_sections(module)[1]
    page = tmp_path / "page.md"
    page.write_text(f"# 页\n\n```python\n{code}\n```\n", encoding="utf-8")
    assert pasted_runs([page], [module]) == [f"page.md pastes snippets/attention.py:{name}"]


def test_include_only_blocks_are_skipped_and_name_files_that_exist():
    """The root conftest.py skips a block that only includes snippet sections (their code runs in
    test_page_code_runs_by_itself); a block with anything else runs. Every file included exists."""
    assert included_modules('--8<-- "snippets/attention.py:sdpa"\n\n--8<-- "snippets/rnn.py:imports"\n') == [
        "snippets/attention.py", "snippets/rnn.py"]
    assert included_modules('--8<-- "snippets/attention.py:sdpa"\nprint(1)\n') is None
    assert included_modules("") is None
    blocks = [b for page in DOCS.rglob("*.md") if "generated" not in page.parts
              for b in extract_from_file(page) if b.syntax == "python"]
    included = [m for b in blocks for m in included_modules(b.code) or []]
    assert len(included) > 50, "the docs' include-only blocks were not found"
    assert not any("pytest.mark.skip" in m for b in blocks for m in b.marks if included_modules(b.code)), (
        "an include-only block carries its own skip comment: the root conftest.py skips it")
    missing = sorted({m for m in included if not (ROOT / m).is_file()})
    assert missing == [], missing

"""What a reader copies from a page runs: a page's snippet includes, in page order, form a program.

For every page, the sections it includes from snippets/ (following nested includes of
other markdown files) are concatenated in order and run in a fresh interpreter, in a
temporary directory, with ``import snippets`` blocked.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
SECTION_START = re.compile(r"#\s*--8<--\s*\[start:([\w-]+)\]")
SECTION_END = re.compile(r"#\s*--8<--\s*\[end:([\w-]+)\]")


def section(path: Path, name: str) -> str:
    """The lines between a module's ``[start:name]`` and ``[end:name]`` markers."""
    lines, inside, found = [], False, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if (m := SECTION_START.search(line)) and m.group(1) == name:
            inside = found = True
            continue
        if (m := SECTION_END.search(line)) and m.group(1) == name:
            inside = False
            continue
        if inside and not SECTION_START.search(line) and not SECTION_END.search(line):
            lines.append(line)
    if not found:
        raise AssertionError(f"{path.relative_to(ROOT)} has no section {name!r}")
    return "\n".join(lines)


def page_code_includes(page: Path) -> list[tuple[Path, str]]:
    """(module, section) pairs a page includes, in reading order, through nested markdown includes."""
    found: list[tuple[Path, str]] = []
    for line in page.read_text(encoding="utf-8").splitlines():
        m = INCLUDE.match(line)
        if not m:
            continue
        target = m.group(1)
        path, _, name = target.partition(":")
        if path.endswith(".py"):
            found.append((ROOT / path, name))
        elif path.endswith(".md") and not path.startswith("docs/generated/"):
            found += page_code_includes(ROOT / path)
    return found


PAGES = sorted(p for p in DOCS.rglob("*.md") if "generated" not in p.parts and page_code_includes(p))


def test_pages_include_code_rather_than_paste_it():
    assert PAGES, "the chapters must include code from snippets/"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_code_runs_by_itself(page, tmp_path):
    includes = page_code_includes(page)
    # Only whole-section includes are runnable programs; a page must not include a
    # section twice (it would show the reader the same code twice).
    assert all(name for _, name in includes), "include named sections, not whole modules"
    assert len(set(includes)) == len(includes), "a section is included twice on this page"
    program = "\n\n".join(section(path, name) for path, name in includes)
    script = tmp_path / "page_code.py"
    script.write_text("import sys\nsys.modules['snippets'] = None  # the copy must stand alone\n" + program + "\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]

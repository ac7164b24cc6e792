"""The `--8<--` sections of snippets/*.py and the includes of docs/*.md, parsed one way for every test."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARKER = re.compile(r"^#\s*--8<--\s*\[(start|end):([\w-]+)\]\s*$")
INCLUDE = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')


def parse_sections(path: Path) -> list[tuple[str, str]]:
    """[(name, code)] in file order, from the marker lines; fails when markers do not pair up."""
    sections, current, lines = [], None, []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        m = MARKER.match(line.strip())
        if m is None:
            if current is not None:
                lines.append(line)
            continue
        kind, name = m.groups()
        if kind == "start":
            assert current is None, f"{Path(path).name}:{number}: [start:{name}] inside [start:{current}]"
            current, lines = name, []
        else:
            assert current == name, f"{Path(path).name}:{number}: [end:{name}] does not close [start:{current}]"
            sections.append((name, "\n".join(lines)))
            current = None
    assert current is None, f"{Path(path).name}: [start:{current}] is never closed"
    return sections


def section(path: Path, name: str) -> str:
    found = dict(parse_sections(path))
    assert name in found, f"{Path(path).relative_to(ROOT)} has no section {name!r}"
    return found[name]


def page_code_includes(page: Path) -> list[tuple[Path, str]]:
    """(module, section) pairs a page includes, in reading order, through nested markdown includes."""
    found: list[tuple[Path, str]] = []
    for line in page.read_text(encoding="utf-8").splitlines():
        m = INCLUDE.match(line)
        if not m:
            continue
        path, _, name = m.group(1).partition(":")
        if path.endswith(".py"):
            found.append((ROOT / path, name))
        elif path.endswith(".md") and not path.startswith("docs/generated/"):
            found += page_code_includes(ROOT / path)
    return found


def pages_with_code() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "generated" not in p.parts and page_code_includes(p))

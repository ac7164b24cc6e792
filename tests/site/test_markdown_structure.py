"""Markdown that renders as something else than it reads: a list item written right after an
indented paragraph of the item before, without a blank line, is swallowed into that paragraph
("- **Elman RNN**：…" showed as text with a dash in chapter 01)."""

from __future__ import annotations

import re
from pathlib import Path

PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.S)
# a line of a paragraph that starts like a Markdown list item: "- ", "* ", "1. "
LIST_MARKER_LINE = re.compile(r"\n(?:[-*]|\d+\.) (?=\S)")


def swallowed_list_items(html: str) -> list[str]:
    """The paragraphs that contain a line starting with a list marker (first 60 chars of that line)."""
    found = []
    for paragraph in PARAGRAPH.findall(html):
        for m in LIST_MARKER_LINE.finditer(paragraph):
            line = re.sub(r"<[^>]+>", "", paragraph[m.start() + 1:].split("\n", 1)[0])
            found.append(line[:60])
    return found


def test_the_check_finds_a_swallowed_item():
    html = "<ul><li><p>自注意力</p><p>与头数无关。\n- <strong>Elman RNN</strong>：每步</p></li></ul>"
    assert swallowed_list_items(html) == ["- Elman RNN：每步"]
    assert swallowed_list_items("<p>a - b\nc</p><ul><li>d</li></ul>") == []


def test_no_page_swallows_a_list_item(built_site: Path):
    pages = sorted(built_site.rglob("index.html"))
    assert len(pages) > 10
    offenders = {str(p.relative_to(built_site)): found
                 for p in pages if (found := swallowed_list_items(p.read_text(encoding="utf-8")))}
    assert offenders == {}, "add a blank line before these list items: " + repr(offenders)
